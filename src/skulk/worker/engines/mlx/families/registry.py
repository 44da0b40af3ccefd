"""The loaders of the model families by config.json `model_type`: each family's module in
`skulk/model_families/` (how it splits, its quirks) with mlx-lm's model class for it.
Adding a family is adding its module there; nothing here changes.
"""

from typing import Any

from skulk.model_families.registry import find_family, known_model_types
from skulk.worker.engines.mlx.families.base import FamilyLoader
from skulk.worker.engines.mlx.families.family import MlxLmFamily


class UnknownModelFamily(ValueError):
    """No family can shard this model."""


def family_for(model_type: str) -> FamilyLoader:
    """The family that loads `model_type`, or UnknownModelFamily naming those that exist."""
    family = find_family(model_type)
    if family is None:
        raise UnknownModelFamily(
            f"{model_type}: pipeline sharding not supported yet; sharded MLX supports "
            f"{', '.join(sorted(known_model_types()))}. Serve it whole on one node instead.")
    return MlxLmFamily(family)


def family_for_config(config: dict[str, Any]) -> FamilyLoader:
    """The family of a parsed config.json."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise UnknownModelFamily("config.json has no model_type; cannot pick a model family")
    return family_for(model_type)
