"""llama.cpp tensor names → Hugging Face Llama names, and the attn_q/attn_k row order.

llama.cpp stores the rows of each query and key head interleaved (its RoPE rotates
adjacent pairs), while Hugging Face Llama rotates the two halves of a head. The
un-permute below restores the Hugging Face order, which is what mlx-lm expects.
"""

import re
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}

_LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}

_LAYER_PATTERN = re.compile(r"blk\.(\d+)\.(.+)")

Scalar = TypeVar("Scalar", bound=np.generic)


@dataclass(frozen=True)
class MappedName:
    """Where a GGUF tensor goes: its Hugging Face name, and which head count (if any)
    its rows must be un-permuted by (`"query"` or `"key"`)."""

    hf_name: str
    unpermute: Literal["query", "key"] | None


def map_llama_name(gguf_name: str) -> MappedName:
    """The Hugging Face name of a llama.cpp Llama tensor.

    Raises ValueError for a name this importer does not know, so an unfamiliar file
    fails loudly instead of loading with missing weights.
    """
    if gguf_name in _GLOBAL_NAMES:
        return MappedName(_GLOBAL_NAMES[gguf_name], None)
    match = _LAYER_PATTERN.fullmatch(gguf_name)
    if match is None or match.group(2) not in _LAYER_NAMES:
        raise ValueError(f"unknown Llama tensor {gguf_name!r} in this GGUF file")
    layer, suffix = match.group(1), match.group(2)
    hf_name = f"model.layers.{layer}.{_LAYER_NAMES[suffix]}"
    if suffix == "attn_q.weight":
        return MappedName(hf_name, "query")
    if suffix == "attn_k.weight":
        return MappedName(hf_name, "key")
    return MappedName(hf_name, None)


def unpermute_rows(rows: npt.NDArray[Scalar], n_heads: int) -> npt.NDArray[Scalar]:
    """Undo llama.cpp's per-head row interleave on axis 0.

    Within each head, llama.cpp's row 2i is Hugging Face's row i and its row 2i+1 is
    Hugging Face's row i + head_dim/2. Only axis 0 moves, so this works the same on
    float weights, on packed quantized rows, and on their per-row scales and biases.
    """
    total = rows.shape[0]
    if total % (2 * n_heads):
        raise ValueError(f"{total} rows do not split into {n_heads} heads of even size")
    half = total // n_heads // 2
    split = rows.reshape(n_heads, half, 2, *rows.shape[1:])
    return np.ascontiguousarray(split.swapaxes(1, 2).reshape(rows.shape))
