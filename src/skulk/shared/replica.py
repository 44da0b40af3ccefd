"""A node's replica of the cluster State, fed by the master's indexed events.

Releases events strictly in index order, buffers early ones, and ignores events from any
master but the elected one and from any of its sessions but the one it follows. A snapshot
switches sessions (a new master's seed is its event 0; a late joiner is answered with one)
or catches a lagging replica up.
"""

from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
from loguru import logger

from skulk.shared.applied_ahead import AppliedAhead
from skulk.shared.apply import apply
from skulk.shared.listener_stream import ListenerStream
from skulk.shared.recent_events import RecentEvents
from skulk.shared.removed_instances import RemovedInstances
from skulk.shared.types.events import IndexedBatch, IndexedEvent, StateSnapshotHydrated
from skulk.shared.types.ids import NodeId, SessionId
from skulk.shared.types.state import State

# Early events held while waiting for a missing one; past this the gap is reported again.
_MAX_BUFFERED_EVENTS = 10_000
# At most this many events are applied in one step of the event loop (~10-30 us each).
_EVENTS_PER_STEP = 16


# The classes of event a subscriber takes (None: every kind).
Kinds = tuple[type, ...] | None


@dataclass(frozen=True)
class _Subscriber:
    """A subscriber's stream, the kinds of event it takes, and whether each comes with
    the State it was applied to."""

    stream: ListenerStream[Any]
    kinds: Kinds
    with_before: bool

    def feed(self, applied: list[tuple[State, IndexedEvent]]) -> None:
        for pair in applied:
            if self.kinds is None or isinstance(pair[1].event, self.kinds):
                self.stream.send_nowait(pair if self.with_before else pair[1])


class StateReplica:
    """Applies indexed events in order and tells listeners what was applied."""

    def __init__(self) -> None:
        self._state = State()
        self._session: SessionId | None = None
        self._buffer: dict[int, IndexedEvent] = {}
        self._subscribers: list[_Subscriber] = []
        self._wakers: list[Callable[[], None]] = []
        self._changed = anyio.Event()
        self._gap_from: int | None = None  # the first index missing behind a later one
        self._expected_master: NodeId | None = None
        self._master_node: NodeId | None = None
        # Events of the followed session received again after they were applied (a
        # replay that overlapped, a resend): what duplicated delivery costs this node.
        self.duplicates = 0
        # The last events applied here, for people to read (`GET /events`).
        self.recent = RecentEvents()
        # Why each recently removed instance went, for those who waited on it.
        self.removed = RemovedInstances()
        # Where this node's master offers the State after each event it indexed, so the
        # event is not applied twice on the master's node.
        self.applied_ahead = AppliedAhead()

    def restore(self, state: State, session: SessionId, master_node: NodeId) -> None:
        """Start from a State read back from this node's own log (before any event
        arrives): the master the node follows next carries it into a new session."""
        self._state = state
        self._session = session
        self._master_node = master_node
        self._changed.set()
        self._changed = anyio.Event()

    def follow_master(self, master: NodeId | None) -> None:
        """Accept events only from `master` (None: from any master, for a lone node)."""
        self._expected_master = master

    @property
    def state(self) -> State:
        return self._state

    @property
    def session(self) -> SessionId | None:
        return self._session

    @property
    def master_node(self) -> NodeId | None:
        """The master whose session this replica follows."""
        return self._master_node

    def take_gap(self) -> int | None:
        """The index a replay should start from, when an event arrived beyond the next one
        since the last call (and None otherwise)."""
        gap, self._gap_from = self._gap_from, None
        return gap

    def next_index(self) -> int:
        """How many events of the session this replica applied (the election's measure of
        how much a node has seen)."""
        return self._state.last_event_applied_idx + 1

    def wake_on_apply(self, waker: Callable[[], None]) -> None:
        """Call `waker` each time events are applied, before any subscriber is fed: for a
        reader that only needs to know that the State moved (the worker's plan), a task's
        hop sooner than a subscription, and no task woken per event. It must not block or
        raise."""
        self._wakers.append(waker)

    def subscribe(self, kinds: Kinds = None) -> ListenerStream[IndexedEvent]:
        """A stream of every event applied from now on, in order (listener_stream.py); with
        `kinds`, only the events of those classes: a reader of a few kinds is not woken
        for the others (every request makes several events)."""
        stream = ListenerStream[IndexedEvent]()
        self._subscribers.append(_Subscriber(stream, kinds, with_before=False))
        return stream

    def subscribe_with_before(self, kinds: Kinds = None
                              ) -> ListenerStream[tuple[State, IndexedEvent]]:
        """Like `subscribe`, each event with the State it was applied to (for readers that
        compare before and after, which would otherwise apply every event again)."""
        stream = ListenerStream[tuple[State, IndexedEvent]]()
        self._subscribers.append(_Subscriber(stream, kinds, with_before=True))
        return stream

    async def run(self, batches: AsyncIterable[IndexedBatch]) -> None:
        """Apply the master's batches as they arrive (each event in index order)."""
        # The loop turns after every `_EVENTS_PER_STEP` events, counted across batches (a
        # replay's long one, or many short ones already waiting), so no step applies more;
        # a batch that arrives alone is applied in the one step that woke for it.
        since_turn = 0
        async for batch in batches:
            for indexed in batch.events:
                self.receive(indexed)
                since_turn += 1
                if since_turn == _EVENTS_PER_STEP:
                    await anyio.lowlevel.checkpoint()
                    since_turn = 0

    def receive(self, indexed: IndexedEvent) -> list[IndexedEvent]:
        """Take one event off the wire; returns the events applied because of it."""
        if self._expected_master is not None and indexed.master_node != self._expected_master:
            return []
        is_snapshot = isinstance(indexed.event, StateSnapshotHydrated)
        if is_snapshot and indexed.session != self._session:
            logger.info("following master {} session {}", indexed.master_node, indexed.session)
            self._session = indexed.session
            self._master_node = indexed.master_node
            self._buffer.clear()
            self._state = State()
            return self._adopt_snapshot(indexed)
        if indexed.session != self._session:
            return []
        if is_snapshot and indexed.index > self._state.last_event_applied_idx + 1:
            return self._adopt_snapshot(indexed)  # catching up past a gap
        if indexed.index <= self._state.last_event_applied_idx:
            self.duplicates += 1
            return []
        self._buffer[indexed.index] = indexed
        applied = self._release_in_order()
        if applied:
            self._notify(applied)
        elif self._buffer:
            self._gap_from = self._state.last_event_applied_idx + 1
        if len(self._buffer) > _MAX_BUFFERED_EVENTS:
            self._buffer.pop(max(self._buffer))
        return [event for _, event in applied]

    def _adopt_snapshot(self, indexed: IndexedEvent) -> list[IndexedEvent]:
        self._buffer = {i: e for i, e in self._buffer.items() if i > indexed.index}
        before = self._state
        self._state = apply(before, indexed)
        applied = [(before, indexed), *self._release_in_order()]
        self._notify(applied)
        return [event for _, event in applied]

    def _release_in_order(self) -> list[tuple[State, IndexedEvent]]:
        """The buffered events that come next, applied, each with the State before it."""
        applied: list[tuple[State, IndexedEvent]] = []
        while (next_index := self._state.last_event_applied_idx + 1) in self._buffer:
            indexed = self._buffer.pop(next_index)
            before = self._state
            self.removed.note(before, indexed.event)
            ahead = self.applied_ahead.take(indexed)
            self._state = ahead if ahead is not None else apply(before, indexed)
            applied.append((before, indexed))
        return applied

    def _notify(self, applied: list[tuple[State, IndexedEvent]]) -> None:
        for waker in self._wakers:
            waker()
        for _, indexed in applied:
            self.recent.record(indexed)
        for subscriber in list(self._subscribers):
            try:
                subscriber.feed(applied)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._subscribers.remove(subscriber)  # its reader has gone
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[State], bool], timeout: float) -> State | None:
        """The first state satisfying `predicate`, or None after `timeout` seconds."""
        with anyio.move_on_after(timeout):
            while not predicate(self._state):
                await self._changed.wait()
            return self._state
        return None
