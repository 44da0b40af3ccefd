"""The node's recent log lines, kept in memory for `GET /v1/logs` (and `skulk logs`):
bounded, so a chatty node costs a fixed amount of memory, and numbered, so a follower
asks only for what came after the last line it saw."""

import threading
from collections import deque

import loguru
from pydantic import BaseModel, Field

# loguru's levels; a filter names the least severe one it wants.
LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "SUCCESS": 25, "WARNING": 30, "ERROR": 40,
          "CRITICAL": 50}
_MAX_MESSAGE_CHARS = 4000


class LogLine(BaseModel):
    """One line the node logged."""

    seq: int = Field(description="Position in the node's log since it started, from 1.")
    time: float = Field(description="Unix time of the line.")
    level: str = Field(description="loguru level: DEBUG, INFO, WARNING, ERROR, ...")
    component: str = Field(description="The module that logged it, e.g. `skulk.worker.worker`.")
    message: str = Field(description="The message (long ones cut at 4000 characters).")


def is_component(module: str, component: str) -> bool:
    """Whether `module` belongs to `component`: `worker` and `skulk.worker` both take
    `skulk.worker.worker`."""
    return any(module == name or module.startswith(name + ".")
               for name in (component, f"skulk.{component}"))


class LogBuffer:
    """The last `capacity` lines; loguru calls `sink` from any thread."""

    def __init__(self, capacity: int = 2000) -> None:
        self._lines: deque[LogLine] = deque(maxlen=capacity)
        self._seq = 0
        self._lock = threading.Lock()

    def sink(self, message: "loguru.Message") -> None:
        record = message.record
        with self._lock:
            self._seq += 1
            self._lines.append(LogLine(
                seq=self._seq, time=record["time"].timestamp(), level=record["level"].name,
                component=record["name"] or "", message=record["message"][:_MAX_MESSAGE_CHARS]))

    @property
    def last_seq(self) -> int:
        return self._seq

    def lines(self, *, after: int = 0, level: str = "TRACE", component: str | None = None,
              limit: int = 200) -> list[LogLine]:
        """The last `limit` lines after `after` at `level` or more severe, from
        `component` when given, oldest first. Raises KeyError for an unknown level."""
        least = LEVELS[level.upper()]
        with self._lock:
            kept = list(self._lines)
        chosen = [line for line in kept if line.seq > after
                  and LEVELS.get(line.level, 0) >= least
                  and (component is None or is_component(line.component, component))]
        return chosen[-limit:] if limit > 0 else []
