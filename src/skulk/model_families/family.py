"""What one model family declares in its module (`FAMILY = ModelFamily(...)`)."""

from collections.abc import Mapping
from dataclasses import dataclass

from skulk.model_families.quirks import Plain
from skulk.shared.types.instances import Sharding

ConfigValue = bool | int | float | str
"""A config.json value of the fields a family's tiny model sets."""

PIPELINE_ONLY: frozenset[Sharding] = frozenset({"pipeline"})
"""Split by layers only: mlx-lm's attention for it takes no plain head split."""
PIPELINE_AND_TENSOR: frozenset[Sharding] = frozenset({"pipeline", "tensor"})
"""Split by layers or by attention heads."""


@dataclass(frozen=True)
class ModelFamily:
    """One config.json `model_type` the sharded MLX engine splits, run with mlx-lm's own
    model class for that type."""

    model_type: str
    """config.json's `model_type`; the family's module is named after it."""
    splits: frozenset[Sharding]
    """The shardings a split of it supports; placement refuses the others."""
    quirks: Plain
    """The few lines around the decoder layers that differ from the plain model."""
    tiny_config: Mapping[str, ConfigValue]
    """The family's own config.json fields of the tiny random-weight model the tests build
    (test support adds the small widths every family shares), set so its differences from
    the plain model are exercised."""
