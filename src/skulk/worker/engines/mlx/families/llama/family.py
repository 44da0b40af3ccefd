"""The Llama family (Llama 2/3, SmolLM2 and other checkpoints of that shape)."""

from pathlib import Path
from typing import Any

from skulk.worker.engines.mlx.collectives import Group, RingGroup
from skulk.worker.engines.mlx.families.llama.pipeline import load_llama_pipeline
from skulk.worker.engines.mlx.families.llama.tensor import load_llama_tensor
from skulk.worker.engines.mlx.shard import ModelShard


class LlamaFamily:
    """Pipeline stages of our own; tensor parallelism through mlx-lm's `shard`."""

    name = "llama"
    model_types = frozenset({"llama"})

    def load_pipeline(
        self, model_dir: Path, config: dict[str, Any], group: Group,
        start_layer: int, end_layer: int,
    ) -> ModelShard:
        return load_llama_pipeline(model_dir, config, group, start_layer, end_layer)

    def load_tensor(self, model_dir: Path, config: dict[str, Any], group: Group) -> ModelShard:
        # mlx-lm's sharded layers all-reduce inside the model, over the mlx group itself.
        if not isinstance(group, RingGroup):
            raise ValueError("a tensor-parallel Llama needs a ring group (connect_ring)")
        return load_llama_tensor(model_dir, config, group)


LLAMA = LlamaFamily()
