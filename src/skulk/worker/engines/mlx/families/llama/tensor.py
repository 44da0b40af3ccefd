"""Tensor parallelism for Llama: every rank holds every layer, split by heads and MLP rows.

mlx-lm's own `shard` splits q/k/v and gate/up by output rows and o/down by input columns
with an all-reduce after each; the embedding and head stay whole, so after the last
all-reduce every rank computes the same logits and rank 0 decides.
"""

from pathlib import Path
from typing import Any

import mlx.core as mx

from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import Group, RingGroup
from skulk.worker.engines.mlx.families.llama.mlx_llama import (
    TensorParallelLlama,
    load_tensor_parallel,
)


def tensor_split_error(config: dict[str, Any], size: int) -> str | None:
    """Why this Llama cannot be split over `size` ranks, or None if it can."""
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    hidden = int(config["hidden_size"])
    head_dim = int(config.get("head_dim") or hidden // heads)
    intermediate = int(config["intermediate_size"])
    if heads % size or kv_heads % size:
        return (f"{heads} query heads and {kv_heads} KV heads do not divide over {size} "
                f"ranks; use a divisor of {kv_heads} or a pipeline split")
    if intermediate % size:
        return f"the MLP width {intermediate} does not divide over {size} ranks"
    quantization = config.get("quantization")
    if quantization is not None:
        group_size = int(quantization["group_size"])
        # o_proj and down_proj are split along their quantized input dimension.
        for name, width in (("attention output", heads * head_dim // size),
                            ("MLP output", intermediate // size)):
            if width % group_size:
                return (f"the {name} slice of {width} columns per rank is not a multiple "
                        f"of the quantization group size {group_size}")
    return None


class LlamaTensorShard:
    """One rank of a tensor-parallel Llama (a ModelShard)."""

    def __init__(self, model: TensorParallelLlama, group: RingGroup) -> None:
        self.model = model
        self.group: Group = group
        self._ring = group
        self.n_layers_here = model.n_layers

    @property
    def decides(self) -> bool:
        return self.group.rank == 0

    def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
        return mlx_api.make_batch_cache(self.n_layers_here, batch_left_padding)

    def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array | None:
        hidden = self.model.hidden(tokens, cache)
        # Every rank must run every all-reduce, so the layers are evaluated here on all
        # ranks (under the deadline) whatever the caller then does with the logits.
        self._ring.evaluate("tensor-parallel forward", hidden)
        if not self.decides:
            return None
        return self.model.logits(hidden).astype(mx.float32)


def load_llama_tensor(model_dir: Path, config: dict[str, Any], group: RingGroup
                      ) -> LlamaTensorShard:
    """This rank's share of every layer of the Llama at `model_dir`."""
    error = tensor_split_error(config, group.size)
    if error is not None:
        raise ValueError(f"cannot split {model_dir.name} by heads: {error}")
    return LlamaTensorShard(load_tensor_parallel(model_dir, group.native), group)
