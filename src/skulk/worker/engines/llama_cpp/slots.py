"""Which llama.cpp sequence serves which request, and what each one's KV cells hold.

The context has a fixed number of sequences ("slots"). A request takes a free slot for as
long as it runs; when it ends, the slot keeps its KV cells, so the next request whose
prompt starts the same way (the next turn of a conversation, or the same system prompt)
prefills only what differs. Pure bookkeeping: the engine does what it decides.
"""

from dataclasses import dataclass, field

from skulk.shared.types.ids import ConversationId, TaskId


@dataclass
class Slot:
    index: int  # the llama.cpp sequence id
    held: list[int] = field(default_factory=list)  # the tokens whose KV the sequence holds
    owner: TaskId | None = None
    session: ConversationId | None = None  # the conversation whose KV this is
    last_used: int = 0


@dataclass(frozen=True)
class Pick:
    """The slot a request takes, and how many of its prompt tokens are already held."""

    slot: Slot
    reused: int


def common_prefix(held: list[int], prompt: list[int]) -> int:
    count = 0
    for a, b in zip(held, prompt, strict=False):
        if a != b:
            break
        count += 1
    return count


def reusable(held: list[int], prompt: list[int]) -> int:
    """How many prompt tokens can keep their KV: the common prefix, less one when it is
    the whole prompt (the last prompt token is evaluated again, for its logits)."""
    count = common_prefix(held, prompt)
    return count - 1 if count == len(prompt) else count


class SlotTable:
    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("a context needs at least one sequence")
        self.slots = [Slot(index) for index in range(count)]
        self._clock = 0

    def free(self) -> list[Slot]:
        return [slot for slot in self.slots if slot.owner is None]

    def cells_held(self) -> int:
        return sum(len(slot.held) for slot in self.slots)

    def pick(self, prompt: list[int], session: ConversationId | None) -> Pick | None:
        """The free slot that holds the most of this prompt; else the session's own slot;
        else the least recently used one, preferring slots no session keeps. None when
        every slot is taken."""
        free = self.free()
        if not free:
            return None
        best = max(free, key=lambda slot: (reusable(slot.held, prompt),
                                           slot.session is not None and slot.session == session,
                                           slot.session is None, -slot.last_used))
        return Pick(best, reusable(best.held, prompt))

    def take(self, slot: Slot, owner: TaskId, session: ConversationId | None,
             keep: int) -> None:
        """`owner` runs in `slot`, which keeps the first `keep` tokens it held."""
        self._clock += 1
        del slot.held[keep:]
        slot.owner, slot.session, slot.last_used = owner, session, self._clock

    def release(self, slot: Slot) -> None:
        self._clock += 1
        slot.owner, slot.last_used = None, self._clock

    def idle_holding(self) -> list[Slot]:
        """Free slots that hold cells, least recently used first: what can be emptied
        when the cache runs short."""
        return sorted((slot for slot in self.free() if slot.held),
                      key=lambda slot: slot.last_used)
