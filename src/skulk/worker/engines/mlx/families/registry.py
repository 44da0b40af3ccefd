"""Model families by config.json `model_type`: how a new architecture joins the engines."""

from typing import Any

from skulk.worker.engines.mlx.families.base import ModelFamily
from skulk.worker.engines.mlx.families.llama import LLAMA

_FAMILIES: tuple[ModelFamily, ...] = (LLAMA,)


class UnknownModelFamily(ValueError):
    """No family can shard this model."""


def known_model_types() -> frozenset[str]:
    """Every `model_type` some family loads."""
    return frozenset(kind for family in _FAMILIES for kind in family.model_types)


def family_for(model_type: str) -> ModelFamily:
    """The family that loads `model_type`, or UnknownModelFamily naming those that exist."""
    for family in _FAMILIES:
        if model_type in family.model_types:
            return family
    raise UnknownModelFamily(
        f"no model family shards model_type {model_type!r}; sharded MLX supports "
        f"{', '.join(sorted(known_model_types()))}. Serve it whole on one node instead.")


def family_for_config(config: dict[str, Any]) -> ModelFamily:
    """The family of a parsed config.json."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise UnknownModelFamily("config.json has no model_type; cannot pick a model family")
    return family_for(model_type)
