"""The last indexed events a node applied, kept small for people to read (`GET /events`).

Each event is rendered once into a short record: a one-line summary and its payload as
JSON cut to `DETAIL_CHARS`. Most are rendered when someone first reads them, not when they
arrive: every node applies every event, and rendering each one cost a follower a fifth of
its time. A snapshot and a new task are rendered on arrival, so a whole State or a
client's long prompt never sits in memory here. Records get a local, gap-free sequence
number that survives a change of master session (the master's index restarts at 0 then),
which is what readers page by.
"""

import json
import time
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass

from skulk.shared.types.events import IndexedEvent, StateSnapshotHydrated, TaskCreated
from skulk.shared.types.ids import NodeId, SessionId

DEFAULT_CAPACITY = 1000
DETAIL_CHARS = 2000
SUMMARY_CHARS = 240


@dataclass(frozen=True)
class EventRecord:
    """One applied event, as `GET /events` shows it."""

    seq: int
    index: int
    session: SessionId
    master_node: NodeId
    kind: str
    origin: NodeId | None
    applied_at: float
    summary: str
    detail: str

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float | bool)


def _summary(payload: dict[str, object]) -> str:
    """Top-level scalars, and the ids, kind and error of nested objects, as `key=value`."""
    parts: list[str] = []
    for key, value in payload.items():
        if _scalar(value):
            parts.append(f"{key}={value}")
        elif isinstance(value, dict):
            for inner, inner_value in value.items():
                if not _scalar(inner_value):
                    continue
                if inner == "kind":
                    parts.append(f"{key}={inner_value}")
                elif inner.endswith("_id") or inner == "error":
                    parts.append(f"{inner}={inner_value}")
    text = " ".join(parts)
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1] + "…"


def render(indexed: IndexedEvent, seq: int, applied_at: float) -> EventRecord:
    """The short, bounded record of one event."""
    event = indexed.event
    if isinstance(event, StateSnapshotHydrated):
        state = event.state
        payload: dict[str, object] = {
            "instances": len(state.instances), "runners": len(state.runners),
            "tasks": len(state.tasks), "last_event_applied_idx": state.last_event_applied_idx}
    else:
        payload = event.model_dump(mode="json", exclude={"kind"})
    detail = json.dumps(payload, separators=(",", ":"))
    if len(detail) > DETAIL_CHARS:
        detail = detail[:DETAIL_CHARS - 1] + "…"
    return EventRecord(seq=seq, index=indexed.index, session=indexed.session,
                       master_node=indexed.master_node, kind=event.kind,
                       origin=indexed.source.origin if indexed.source else None,
                       applied_at=applied_at, summary=_summary(payload), detail=detail)


@dataclass
class _Entry:
    """An applied event: rendered already, or held until someone reads it."""

    seq: int
    kind: str
    applied_at: float
    indexed: IndexedEvent | None
    rendered: EventRecord | None

    def record(self) -> EventRecord:
        if self.rendered is None:
            assert self.indexed is not None
            self.rendered = render(self.indexed, self.seq, self.applied_at)
            self.indexed = None
        return self.rendered


class RecentEvents:
    """A ring of the last `capacity` applied events."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY,
                 clock: Callable[[], float] = time.time) -> None:
        self._entries: deque[_Entry] = deque(maxlen=capacity)
        self._next_seq = 1
        self._clock = clock

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest record; 0 before any."""
        return self._next_seq - 1

    def record(self, indexed: IndexedEvent) -> None:
        entry = _Entry(self._next_seq, indexed.event.kind, self._clock(), indexed, None)
        if isinstance(indexed.event, StateSnapshotHydrated | TaskCreated):
            entry.record()  # what they carry is too big to hold
        self._entries.append(entry)
        self._next_seq += 1

    def query(self, after_seq: int = 0, limit: int = 200,
              kinds: Collection[str] = ()) -> list[EventRecord]:
        """Records newer than `after_seq`, oldest first, at most the newest `limit` of
        them, only of `kinds` when given."""
        chosen = [e for e in self._entries
                  if e.seq > after_seq and (not kinds or e.kind in kinds)]
        return [e.record() for e in chosen[-limit:]] if limit > 0 else []
