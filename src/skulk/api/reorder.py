"""Per-command reorder buffer for data-plane chunks: strictly in order, no duplicates."""

from typing import Generic, TypeVar

T = TypeVar("T")

# Past this many early chunks, the missing one is taken as lost and skipped, so a
# best-effort drop can never stall a stream forever.
DEFAULT_MAX_BUFFERED = 256


class ReorderBuffer(Generic[T]):
    """Releases items by sequence number, from 0, each exactly once."""

    def __init__(self, max_buffered: int = DEFAULT_MAX_BUFFERED) -> None:
        self._next = 0
        self._early: dict[int, T] = {}
        self._max_buffered = max_buffered
        self.skipped = 0

    def push(self, sequence: int, item: T) -> list[T]:
        """Take one item; return the items now releasable, in order."""
        if sequence == self._next and not self._early:  # in order, nothing early: as a rule
            self._next = sequence + 1
            return [item]
        if sequence < self._next or sequence in self._early:
            return []  # a duplicate
        self._early[sequence] = item
        if len(self._early) > self._max_buffered:
            lowest = min(self._early)
            self.skipped += lowest - self._next
            self._next = lowest
        released = []
        while self._next in self._early:
            released.append(self._early.pop(self._next))
            self._next += 1
        return released
