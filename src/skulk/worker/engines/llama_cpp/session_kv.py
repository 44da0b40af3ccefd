"""Saving and restoring one conversation's KV cache in a llama.cpp context.

Only the sequence's KV cells and token ids are kept: llama-cpp-python's own
`save_state`/`load_state` also copy the logits of every position (~100 MB for this
model), which made restoring a long session cost more than the prefill it saves. After a
restore the next `Llama.generate` re-evaluates at least one token, so no logits are needed.
"""

import ctypes
from dataclasses import dataclass
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

_SEQUENCE = 0  # llama-cpp-python decodes everything in sequence 0


@dataclass(frozen=True)
class SavedKv:
    token_ids: npt.NDArray[np.intc]
    data: Any  # a ctypes byte array holding the sequence's KV cells
    size: int


def save(llama: Any) -> SavedKv:
    context = llama._ctx.ctx
    size = llama_cpp.llama_state_seq_get_size(context, _SEQUENCE)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(context, buffer, size, _SEQUENCE)
    return SavedKv(llama.input_ids[:llama.n_tokens].copy(), buffer, int(written))


def restore(llama: Any, saved: SavedKv) -> None:
    llama._ctx.kv_cache_seq_rm(_SEQUENCE, 0, -1)
    if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, saved.data, saved.size,
                                          _SEQUENCE) == 0:
        llama.reset()  # could not restore: the next turn prefills in full, still correct
        return
    count = len(saved.token_ids)
    llama.input_ids[:count] = saved.token_ids
    llama.n_tokens = count
    llama._requires_eval = True
