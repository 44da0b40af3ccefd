"""Pipeline parallelism for Llama: each rank runs a contiguous run of layers.

Rank 0 embeds the tokens; every rank runs its layers and hands the hidden states to the
next rank (float32 on the wire, whatever the model computes in); the last rank applies
the final norm and the head and is the one that decides each token. Each rank keeps KV
only for its own layers.
"""

from pathlib import Path
from typing import Any

import mlx.core as mx

from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import Group
from skulk.worker.engines.mlx.families.llama.mlx_llama import (
    LlamaStage,
    load_into,
    quantize_like_checkpoint,
    read_weights,
)
from skulk.worker.engines.mlx.families.llama.weights import StageSpec, local_path, stage_spec

# Hidden states travel as float32 so any model dtype survives the hop exactly.
WIRE_DTYPE = mx.float32


class LlamaPipelineShard:
    """One rank's stage of a Llama pipeline (a ModelShard)."""

    def __init__(self, stage: LlamaStage, group: Group, hidden_size: int) -> None:
        self.stage = stage
        self.group = group
        self.n_layers_here = stage.n_layers
        self.hidden_size = hidden_size

    @property
    def decides(self) -> bool:
        return self.group.rank == self.group.size - 1

    def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
        return mlx_api.make_batch_cache(self.n_layers_here, batch_left_padding)

    def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array | None:
        batch, length = tokens.shape
        if self.group.rank == 0:
            hidden = self.stage.embed(tokens)
        else:
            received = self.group.recv(
                (batch, length, self.hidden_size), WIRE_DTYPE, self.group.rank - 1)
            hidden = received.astype(self.stage.activation_dtype)
        hidden = self.stage.run_layers(hidden, cache)
        if not self.decides:
            # Evaluating the send also runs this rank's layers and fills its cache.
            self.group.send(hidden.astype(WIRE_DTYPE), self.group.rank + 1)
            return None
        return self.stage.head(hidden).astype(mx.float32)


def load_llama_stage(model_dir: Path, config: dict[str, Any], spec: StageSpec) -> LlamaStage:
    """Build the stage and read only its tensors from the checkpoint."""
    stage = LlamaStage(config, spec.n_layers, embeds=spec.embeds, heads=spec.heads,
                       tied=spec.tied)

    def rename(path: str) -> str | None:
        return local_path(path, spec)

    weights = read_weights(model_dir, rename)
    quantize_like_checkpoint(stage.module, config, weights, rename)
    load_into(stage.module, weights)
    return stage


def load_llama_pipeline(
    model_dir: Path, config: dict[str, Any], group: Group, start_layer: int, end_layer: int
) -> LlamaPipelineShard:
    """This rank's stage of layers [start_layer, end_layer) of the Llama at `model_dir`."""
    spec = stage_spec(
        rank=group.rank, size=group.size, start_layer=start_layer, end_layer=end_layer,
        n_layers=int(config["num_hidden_layers"]),
        tied=bool(config.get("tie_word_embeddings", True)))
    stage = load_llama_stage(model_dir, config, spec)
    return LlamaPipelineShard(stage, group, hidden_size=int(config["hidden_size"]))
