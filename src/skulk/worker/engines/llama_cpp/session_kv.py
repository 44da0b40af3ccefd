"""Conversations whose KV cells were moved out of the context to make room, kept in host
memory so their next turn restores them instead of prefilling its history again.

Only a sequence's KV cells and token ids are kept (no logits: the next turn evaluates at
least its last prompt token again). Beyond `capacity` the least recently saved is dropped;
its next turn prefills in full, which is slower but gives the same tokens.
"""

from collections import OrderedDict
from dataclasses import dataclass

from skulk.shared.types.ids import ConversationId
from skulk.worker.engines.llama_cpp.sequences_lib import KvBytes, SequenceContext
from skulk.worker.engines.llama_cpp.slots import reusable


@dataclass(frozen=True)
class SavedKv:
    token_ids: list[int]
    data: KvBytes  # the sequence's KV cells
    size: int


class SavedSessions:
    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._saved: OrderedDict[ConversationId, SavedKv] = OrderedDict()

    def __contains__(self, session: ConversationId) -> bool:
        return session in self._saved

    def reusable(self, session: ConversationId, prompt: list[int]) -> int:
        """How many of the prompt's tokens the saved cells would spare prefilling."""
        saved = self._saved.get(session)
        return 0 if saved is None else reusable(saved.token_ids, prompt)

    def save(self, session: ConversationId, context: SequenceContext, sequence: int,
             held: list[int]) -> None:
        if self._capacity == 0 or not held:
            return
        data, size = context.save(sequence)
        self._saved[session] = SavedKv(list(held), data, size)
        self._saved.move_to_end(session)
        while len(self._saved) > self._capacity:
            self._saved.popitem(last=False)

    def restore(self, session: ConversationId, context: SequenceContext,
                sequence: int) -> list[int]:
        """Put the session's saved cells in `sequence` (emptied first); the tokens it now
        holds (none if nothing was saved or llama.cpp refused the cells)."""
        saved = self._saved.pop(session, None)
        if saved is None or not context.restore(sequence, saved.data, saved.size):
            return []
        return saved.token_ids
