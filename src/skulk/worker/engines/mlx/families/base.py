"""How the sharded engines load a model family's shard."""

from pathlib import Path
from typing import Any, Protocol

from skulk.worker.engines.mlx.collectives import Group
from skulk.worker.engines.mlx.shard import ModelShard


class FamilyLoader(Protocol):
    """How the sharded engines load one model family's shard (its module in
    `skulk/model_families/` says how it splits and where it differs)."""

    @property
    def name(self) -> str: ...

    @property
    def model_types(self) -> frozenset[str]:
        """The config.json `model_type` values this family loads."""
        ...

    def load_pipeline(
        self, model_dir: Path, config: dict[str, Any], group: Group,
        start_layer: int, end_layer: int,
    ) -> ModelShard:
        """This rank's stage: layers [start_layer, end_layer), passing hidden states on."""
        ...

    def load_whole(self, model_dir: Path, config: dict[str, Any], group: Group
                   ) -> ModelShard | None:
        """The whole model on one rank when the family runs it itself; None: mlx-lm's."""
        ...

    def load_tensor(self, model_dir: Path, config: dict[str, Any], group: Group) -> ModelShard:
        """This rank's share of every layer, split by heads over the group."""
        ...
