"""The column/row split of a standard attention and MLP, for families whose mlx-lm model
has no `shard` of its own (Gemma 2, Gemma 3, Phi-3): the split mlx-lm's Llama `shard`
makes.

q/k/v and gate/up keep their rows for this rank's heads and MLP slice ("all-to-sharded"),
o and down their matching columns with an all-reduce after ("sharded-to-all"); each
attention then runs its share of the query and KV heads, in the same ratio. Phi-3 fuses
q, k and v in one `qkv_proj` and gate and up in one `gate_up_proj`: each block of the
fused rows is split on its own (the rank keeps its q heads, then its k heads, then its v
heads), so the rank's fused output splits where the attention and MLP split it.
"""

import importlib
from typing import Any

import mlx.core as mx

_distributed: Any = importlib.import_module("mlx.nn.layers.distributed")

_ROWS = (("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"),
         ("mlp", "gate_proj"), ("mlp", "up_proj"))
_COLUMNS = (("self_attn", "o_proj"), ("mlp", "down_proj"))


def fused_qkv_blocks(attention: Any) -> list[int]:
    """Where q ends and k ends in a fused qkv_proj's rows (the blocks split one by one)."""
    queries = attention.n_heads * attention.head_dim
    return [queries, queries + attention.n_kv_heads * attention.head_dim]


def _split_rows(part: Any, name: str, group: mx.distributed.Group,
                segments: int | list[int] = 1) -> None:
    setattr(part, name, _distributed.shard_linear(
        getattr(part, name), "all-to-sharded", segments=segments, group=group))


def split_by_heads(model: Any, group: mx.distributed.Group) -> None:
    """Split every decoder layer of `model` over `group`, in place."""
    size = group.size()
    for layer in model.model.layers:
        attention, mlp = layer.self_attn, layer.mlp
        if "qkv_proj" in attention:
            _split_rows(attention, "qkv_proj", group, fused_qkv_blocks(attention))
        if "gate_up_proj" in mlp:
            _split_rows(mlp, "gate_up_proj", group, 2)
        for block, name in _ROWS:
            part = getattr(layer, block)
            if name in part:
                _split_rows(part, name, group)
        for block, name in _COLUMNS:
            part = getattr(layer, block)
            setattr(part, name, _distributed.shard_linear(
                getattr(part, name), "sharded-to-all", group=group))
        attention.n_heads //= size
        attention.n_kv_heads //= size
