"""The column/row split of a standard attention and MLP, for families whose mlx-lm model
has no `shard` of its own (Gemma 3): the split mlx-lm's Llama `shard` makes.

q/k/v and gate/up keep their rows for this rank's heads and MLP slice ("all-to-sharded"),
o and down their matching columns with an all-reduce after ("sharded-to-all"); each
attention then runs its share of the query and KV heads, in the same ratio.
"""

import importlib
from typing import Any

import mlx.core as mx

_distributed: Any = importlib.import_module("mlx.nn.layers.distributed")

_ROWS = (("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"),
         ("mlp", "gate_proj"), ("mlp", "up_proj"))
_COLUMNS = (("self_attn", "o_proj"), ("mlp", "down_proj"))


def split_by_heads(model: Any, group: mx.distributed.Group) -> None:
    """Split every decoder layer of `model` over `group`, in place."""
    size = group.size()
    for layer in model.model.layers:
        for block, name in _ROWS:
            part = getattr(layer, block)
            setattr(part, name, _distributed.shard_linear(
                getattr(part, name), "all-to-sharded", group=group))
        for block, name in _COLUMNS:
            part = getattr(layer, block)
            setattr(part, name, _distributed.shard_linear(
                getattr(part, name), "sharded-to-all", group=group))
        layer.self_attn.n_heads //= size
        layer.self_attn.n_kv_heads //= size
