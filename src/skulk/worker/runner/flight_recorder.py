"""The first and the last lifecycle entries of one runner, for diagnostics after the fact.

The first entries (spawned, loading, loaded, warm) are kept for the runner's whole life:
they say how it started, which matters most when it later misbehaves. After them, only the
newest entries are kept, and the recorder counts what it had to drop in between.
"""

import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass

HEAD_CAPACITY = 16
TAIL_CAPACITY = 128


@dataclass(frozen=True)
class Entry:
    at: float  # wall-clock seconds (time.time)
    what: str  # spawned, status, task_started, task_ended, died, shutdown_step, ...
    detail: str


class FlightRecorder:
    def __init__(self, head_capacity: int = HEAD_CAPACITY,
                 tail_capacity: int = TAIL_CAPACITY,
                 clock: Callable[[], float] = time.time) -> None:
        self._head: list[Entry] = []
        self._head_capacity = head_capacity
        self._tail: deque[Entry] = deque(maxlen=tail_capacity)
        self._dropped = 0
        self._clock = clock

    @property
    def dropped(self) -> int:
        """How many entries between the first and the newest were let go."""
        return self._dropped

    def record(self, what: str, detail: str = "") -> None:
        entry = Entry(self._clock(), what, detail)
        if len(self._head) < self._head_capacity:
            self._head.append(entry)
            return
        if len(self._tail) == self._tail.maxlen:
            self._dropped += 1
        self._tail.append(entry)

    def entries(self) -> list[dict[str, object]]:
        return [asdict(entry) for entry in (*self._head, *self._tail)]
