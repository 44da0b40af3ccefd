"""Pipeline parallelism: each rank runs a contiguous run of layers of mlx-lm's model.

Rank 0 embeds the tokens; every rank runs its layers and hands the hidden states to the
next rank, in the model's own activation dtype (bf16 for a bf16 model: the hop carries
what the next layer would have received in one process, so nothing is rounded that one
process would not round); the last rank applies the final norm and the head and is the
one that decides each token. Each rank keeps KV only for its own layers.
"""

from pathlib import Path
from typing import Any

import mlx.core as mx

from skulk.model_families.quirks import Plain
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import Group, receive_and_run
from skulk.worker.engines.mlx.families.stage import Stage, load_stage
from skulk.worker.engines.mlx.families.stage_spec import stage_spec


class PipelineShard:
    """One rank's stage of a pipeline (a ModelShard)."""

    def __init__(self, stage: Stage, group: Group, hidden_size: int) -> None:
        self.stage = stage
        self.group = group
        self.n_layers_here = stage.n_layers
        self.hidden_size = hidden_size
        self.wire_dtype = stage.activation_dtype

    @property
    def decides(self) -> bool:
        return self.group.rank == self.group.size - 1

    def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
        return mlx_api.make_batch_cache(self.n_layers_here, batch_left_padding)

    def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array | None:
        hidden = self._through_stage(tokens, cache)
        return None if hidden is None else self.stage.head(hidden).astype(mx.float32)

    def final_hidden(self, tokens: mx.array,
                     cache: list[mlx_api.LayerCache]) -> mx.array | None:
        """The final-normed hidden states on the last rank (embeddings pool them)."""
        hidden = self._through_stage(tokens, cache)
        return None if hidden is None else self.stage.model.model.norm(hidden)

    def _through_stage(self, tokens: mx.array,
                       cache: list[mlx_api.LayerCache]) -> mx.array | None:
        """This stage's layers; the last rank keeps their output, the others send it on."""
        batch, length = tokens.shape
        if self.group.rank == 0:
            hidden = self.stage.run_layers(self.stage.embed(tokens), cache)
        else:
            # The layers' graph is built while the rank before still computes; evaluating
            # it with the receive fills this rank's cache.
            hidden = receive_and_run(
                self.group, (batch, length, self.hidden_size), self.wire_dtype,
                self.group.rank - 1, lambda received: self.stage.run_layers(received, cache))
        if not self.decides:
            # On rank 0, evaluating the send also runs its layers and fills its cache.
            self.group.send(hidden.astype(self.wire_dtype), self.group.rank + 1)
            return None
        return hidden


def hop_bytes_per_token(hidden_size: int, dtype: mx.Dtype) -> int:
    """What one hop carries per token: one hidden state in the activation dtype."""
    return hidden_size * dtype.size


def load_pipeline(model_dir: Path, config: dict[str, Any], group: Group, quirks: Plain,
                  start_layer: int, end_layer: int) -> PipelineShard:
    """This rank's stage of the model at `model_dir`: layers [start_layer, end_layer)."""
    spec = stage_spec(rank=group.rank, size=group.size, start_layer=start_layer,
                      end_layer=end_layer, n_layers=int(config["num_hidden_layers"]))
    stage = load_stage(model_dir, config, spec, quirks)
    return PipelineShard(stage, group, int(config["hidden_size"]))
