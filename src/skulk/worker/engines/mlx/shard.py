"""A model shard: the part of a model one rank runs, and the whole-model shard of one process.

The generation loop only ever talks to a `ModelShard` and its `Group`, so the same loop
drives a whole model in one process, a pipeline split by layers and a tensor split by
heads (those two live in pipeline*.py and tensor*.py).
"""

from typing import Protocol

import mlx.core as mx

from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import Group, SoloGroup


class ModelShard(Protocol):
    group: Group
    n_layers_here: int

    @property
    def decides(self) -> bool:
        """True on exactly one rank: the one whose logits the next tokens are sampled from
        (single node: itself; pipeline: the last rank; tensor: rank 0)."""
        ...

    def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
        """One empty mlx-lm BatchKVCache per local layer, for a batch of this padding."""
        ...

    def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array | None:
        """Run this rank's layers on tokens int32 [B, T] (the same on every rank).

        Returns logits [B, T, V] on the deciding rank and None elsewhere. The logits may be
        lazy: a caller that only needs the cache filled (prefill) never evaluates them.
        """
        ...


class WholeModelShard:
    """Every layer in one process; it decides every token."""

    def __init__(self, model: mlx_api.LanguageModel, group: Group | None = None) -> None:
        self.model = model
        self.group: Group = group if group is not None else SoloGroup()
        self.n_layers_here = model.n_layers

    @property
    def decides(self) -> bool:
        return True

    def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
        return mlx_api.make_batch_cache(self.n_layers_here, batch_left_padding)

    def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array | None:
        return self.model(tokens, cache).astype(mx.float32)
