"""A model family as the sharded engines load it: mlx-lm's model class for its
`model_type`, with the family's quirks (`skulk/model_families/`)."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skulk.model_families.family import ModelFamily
from skulk.worker.engines.mlx.collectives import Group
from skulk.worker.engines.mlx.families.pipeline import load_pipeline
from skulk.worker.engines.mlx.families.tensor import load_tensor
from skulk.worker.engines.mlx.shard import ModelShard


@dataclass(frozen=True)
class MlxLmFamily:
    """One mlx-lm `model_type`, split by pipeline and (where its family's `splits` say so)
    by heads."""

    family: ModelFamily

    @property
    def name(self) -> str:
        return self.family.model_type

    @property
    def model_types(self) -> frozenset[str]:
        return frozenset({self.family.model_type})

    def load_pipeline(
        self, model_dir: Path, config: dict[str, Any], group: Group,
        start_layer: int, end_layer: int,
    ) -> ModelShard:
        return load_pipeline(model_dir, config, group, self.family.quirks, start_layer,
                             end_layer)

    def load_whole(self, model_dir: Path, config: dict[str, Any], group: Group
                   ) -> ModelShard | None:
        if self.family.quirks.whole_model_is_mlx_lm:
            return None
        return load_pipeline(model_dir, config, group, self.family.quirks, 0,
                             int(config["num_hidden_layers"]))

    def load_tensor(self, model_dir: Path, config: dict[str, Any], group: Group) -> ModelShard:
        if "tensor" not in self.family.splits:
            raise ValueError(f"{self.name}: tensor sharding not supported; use a pipeline "
                             "split")
        return load_tensor(model_dir, config, group, self.family.quirks)
