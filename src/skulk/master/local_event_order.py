"""The master's side of local events: each producer's events indexed once, in its order.

A producer numbers its events and resends any it has not yet seen indexed, so the master
gets duplicates and, after a lost message or a change of master, a later event before an
earlier one. Duplicates (at or below what is already indexed) are dropped. An event ahead
of the next expected one is held until the gap fills; if it does not fill within
`hold_seconds` (the producer gave up on it), the held events go on without it.
"""

from collections.abc import Callable, Mapping

from skulk.shared.types.event_source import EventSource
from skulk.shared.types.events import LocalEvent
from skulk.shared.types.ids import NodeId

DEFAULT_HOLD_SECONDS = 3.0

_Producer = tuple[NodeId, str]


class LocalEventOrder:
    def __init__(self, marks: Callable[[], Mapping[NodeId, EventSource]],
                 hold_seconds: float = DEFAULT_HOLD_SECONDS) -> None:
        self._marks = marks
        self._hold = hold_seconds
        self._next: dict[_Producer, int] = {}
        self._held: dict[_Producer, dict[int, tuple[LocalEvent, float]]] = {}

    def arrive(self, local: LocalEvent, now: float) -> list[LocalEvent]:
        """The events to index now, in order (maybe none, maybe several)."""
        producer = (local.origin, local.epoch)
        expected = self._expected(producer)
        held = self._held.setdefault(producer, {})
        if local.origin_seq < expected or local.origin_seq in held:
            return []
        if local.origin_seq > expected:
            held[local.origin_seq] = (local, now)
            return []
        ready = [local]
        expected += 1
        while expected in held:
            ready.append(held.pop(expected)[0])
            expected += 1
        self._next[producer] = expected
        if not held:
            del self._held[producer]
        return ready

    def overdue(self, now: float) -> list[LocalEvent]:
        """Held events whose gap did not fill in time, released in order past the gap."""
        ready: list[LocalEvent] = []
        for producer, held in list(self._held.items()):
            if held and now - min(arrived for _, arrived in held.values()) < self._hold:
                continue
            for seq in sorted(held):
                ready.append(held[seq][0])
                self._next[producer] = seq + 1
            del self._held[producer]
        return ready

    def _expected(self, producer: _Producer) -> int:
        if producer not in self._next:
            mark = self._marks().get(producer[0])
            self._next[producer] = (mark.origin_seq + 1 if mark is not None
                                    and mark.epoch == producer[1] else 0)
        return self._next[producer]
