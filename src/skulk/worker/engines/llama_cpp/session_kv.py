"""Saving and restoring one conversation's KV cache in a llama.cpp context.

Only the sequence's KV cells and token ids are kept: llama-cpp-python's own
`save_state`/`load_state` also copy the logits of every position (~100 MB for this
model), which made restoring a long session cost more than the prefill it saves. After a
restore the next generation re-evaluates at least one token, so no logits are needed.
"""

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from skulk.worker.engines.llama_cpp.llama_lib import KvBytes, LlamaContext


@dataclass(frozen=True)
class SavedKv:
    token_ids: npt.NDArray[np.intc]
    data: KvBytes  # the sequence's KV cells
    size: int


def save(context: LlamaContext) -> SavedKv:
    data, size = context.save_sequence()
    return SavedKv(context.held_tokens().copy(), data, size)


def restore(context: LlamaContext, saved: SavedKv) -> None:
    if not context.load_sequence(saved.data, saved.size):
        context.reset()  # could not restore: the next turn prefills in full, still correct
        return
    context.hold_tokens(saved.token_ids)
