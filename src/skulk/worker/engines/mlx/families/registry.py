"""Model families by config.json `model_type`: how a new architecture joins the engines.

A family is mlx-lm's own model class for that `model_type` and the few lines around its
layers that differ (`quirks.py`); adding one is a line here, one in `support.py`, and a
case in the per-family ring test.
"""

from typing import Any

from skulk.worker.engines.mlx.families.base import ModelFamily
from skulk.worker.engines.mlx.families.family import MlxLmFamily
from skulk.worker.engines.mlx.families.quirks import (
    PLAIN,
    Gemma2Quirks,
    Gemma3Quirks,
    LlamaQuirks,
)

_FAMILIES: tuple[ModelFamily, ...] = (
    MlxLmFamily("llama", LlamaQuirks()),
    MlxLmFamily("mistral", LlamaQuirks()),
    MlxLmFamily("qwen2", PLAIN),
    MlxLmFamily("qwen3", PLAIN),
    MlxLmFamily("gemma2", Gemma2Quirks()),
    MlxLmFamily("gemma3_text", Gemma3Quirks()),
    MlxLmFamily("phi3", PLAIN),
)


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
        f"{model_type}: pipeline sharding not supported yet; sharded MLX supports "
        f"{', '.join(sorted(known_model_types()))}. Serve it whole on one node instead.")


def family_for_config(config: dict[str, Any]) -> ModelFamily:
    """The family of a parsed config.json."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise UnknownModelFamily("config.json has no model_type; cannot pick a model family")
    return family_for(model_type)
