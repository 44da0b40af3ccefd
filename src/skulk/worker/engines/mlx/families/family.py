"""A model family as the sharded engines see it: mlx-lm's model class plus its quirks."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skulk.worker.engines.mlx.collectives import Group
from skulk.worker.engines.mlx.families.pipeline import load_pipeline
from skulk.worker.engines.mlx.families.quirks import Plain
from skulk.worker.engines.mlx.families.support import SPLITS
from skulk.worker.engines.mlx.families.tensor import load_tensor
from skulk.worker.engines.mlx.shard import ModelShard


@dataclass(frozen=True)
class MlxLmFamily:
    """One mlx-lm `model_type`, split by pipeline and (where `support.SPLITS` says so)
    by heads."""

    name: str
    quirks: Plain

    @property
    def model_types(self) -> frozenset[str]:
        return frozenset({self.name})

    def load_pipeline(
        self, model_dir: Path, config: dict[str, Any], group: Group,
        start_layer: int, end_layer: int,
    ) -> ModelShard:
        return load_pipeline(model_dir, config, group, self.quirks, start_layer, end_layer)

    def load_whole(self, model_dir: Path, config: dict[str, Any], group: Group
                   ) -> ModelShard | None:
        if self.quirks.whole_model_is_mlx_lm:
            return None
        return load_pipeline(model_dir, config, group, self.quirks, 0,
                             int(config["num_hidden_layers"]))

    def load_tensor(self, model_dir: Path, config: dict[str, Any], group: Group) -> ModelShard:
        if "tensor" not in SPLITS[self.name]:
            raise ValueError(f"{self.name}: tensor sharding not supported; use a pipeline "
                             "split")
        return load_tensor(model_dir, config, group, self.quirks)
