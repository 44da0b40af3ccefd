"""The model families, found by their modules: every module of this package except the
shared ones below declares one `FAMILY` and is named after its `model_type`. Adding a
family is adding its module; nothing else lists it.

Imports nothing of mlx: placement asks `split_refusal` before any node tries a split.
"""

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType

import skulk.model_families as package
from skulk.model_families.family import ModelFamily
from skulk.shared.types.instances import Sharding

SHARED_MODULES = frozenset({"family", "quirks", "registry"})
"""Modules of this package that every family uses rather than one family's."""


def family_module_names() -> list[str]:
    """The package's modules that declare a family (tests and shared modules aside)."""
    return sorted(info.name for info in pkgutil.iter_modules(package.__path__)
                  if info.name not in SHARED_MODULES and not info.name.endswith("_test")
                  and info.name != "conftest")


@cache
def families() -> Mapping[str, ModelFamily]:
    """Every family by `model_type`, imported on first use."""
    found: dict[str, ModelFamily] = {}
    for name in family_module_names():
        module = importlib.import_module(f"{package.__name__}.{name}")
        family = getattr(module, "FAMILY", None)
        if not isinstance(family, ModelFamily):
            raise TypeError(f"{module.__name__} declares no FAMILY = ModelFamily(...)")
        if family.model_type != name:
            raise TypeError(f"{module.__name__} declares model_type {family.model_type!r}; "
                            "a family's module is named after its model_type")
        found[name] = family
    return MappingProxyType(found)


def known_model_types() -> frozenset[str]:
    """Every `model_type` some family splits."""
    return frozenset(families())


def find_family(model_type: str) -> ModelFamily | None:
    """The family of `model_type`, None when no module declares it."""
    return families().get(model_type)


_NO_TENSOR_WHY = ("mlx-lm's attention for it does not take a plain head split (fused "
                  "projections, or masks that do not survive one); use a pipeline split")


def split_refusal(model_type: str, sharding: Sharding, width: int) -> str | None:
    """Why a model of this type cannot be split `width` ways by `sharding`, or None.
    A width of one is the whole model, which mlx-lm runs for any family it knows."""
    if width <= 1:
        return None
    family = find_family(model_type)
    if family is None:
        kinds = ", ".join(sorted(known_model_types()))
        return (f"{model_type}: {sharding} sharding not supported yet (MLX splits "
                f"{kinds}); serve it on one node")
    if sharding not in family.splits:
        return f"{model_type}: {sharding} sharding not supported: {_NO_TENSOR_WHY}"
    return None
