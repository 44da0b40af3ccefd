"""When each pipeline hop happened, so a traced request can show its hops.

A ring group notes every send and receive of activations; when a traced request leaves the
engine, it takes the hops made while it was in the batch (hops are shared by the batch's
requests, so each request sees all of them). Only the newest hops are kept.
"""

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from skulk.shared.types.ids import NodeId
from skulk.shared.types.traces import Span

CAPACITY = 4096


def _now_us() -> int:
    return time.time_ns() // 1000


@dataclass(frozen=True)
class Hop:
    name: str  # pipeline.send or pipeline.recv
    start_us: int
    duration_us: int


class HopLog:
    def __init__(self, capacity: int = CAPACITY, clock: Callable[[], int] = _now_us) -> None:
        self._hops: deque[Hop] = deque(maxlen=capacity)
        self.clock = clock

    def note(self, name: str, start_us: int) -> None:
        self._hops.append(Hop(name, start_us, max(self.clock() - start_us, 0)))

    def spans_since(self, start_us: int) -> tuple[Span, ...]:
        """The hops that started at or after `start_us`, as spans without node or rank."""
        return tuple(Span(name=hop.name, node_id=NodeId(""), start_us=hop.start_us,
                          duration_us=hop.duration_us)
                     for hop in self._hops if hop.start_us >= start_us)
