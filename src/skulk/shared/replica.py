"""A node's replica of the cluster State, fed by the master's indexed events.

Releases events strictly in index order, buffers early ones, and ignores events from
any master session but the one it follows. A session starts with a snapshot at index 0,
so seeing one means a (new) master is speaking.
"""

import math
from collections.abc import AsyncIterable, Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from loguru import logger

from skulk.shared.apply import apply
from skulk.shared.types.events import IndexedEvent, StateSnapshotHydrated
from skulk.shared.types.ids import SessionId
from skulk.shared.types.state import State

# Early events held while waiting for a missing one; past this the gap is reported again.
_MAX_BUFFERED_EVENTS = 10_000


class StateReplica:
    """Applies indexed events in order and tells listeners what was applied."""

    def __init__(self, *, on_gap: Callable[[int], None] | None = None) -> None:
        self._state = State()
        self._session: SessionId | None = None
        self._buffer: dict[int, IndexedEvent] = {}
        self._listeners: list[MemoryObjectSendStream[IndexedEvent]] = []
        self._changed = anyio.Event()
        self._on_gap = on_gap

    @property
    def state(self) -> State:
        return self._state

    @property
    def session(self) -> SessionId | None:
        return self._session

    def subscribe(self) -> MemoryObjectReceiveStream[IndexedEvent]:
        """A stream of every event applied from now on, in order."""
        send, receive = anyio.create_memory_object_stream[IndexedEvent](math.inf)
        self._listeners.append(send)
        return receive

    async def run(self, events: AsyncIterable[IndexedEvent]) -> None:
        async for indexed in events:
            self.receive(indexed)

    def receive(self, indexed: IndexedEvent) -> list[IndexedEvent]:
        """Take one event off the wire; returns the events applied because of it."""
        if isinstance(indexed.event, StateSnapshotHydrated) and indexed.index == 0:
            if indexed.session != self._session:
                logger.info("following master session {}", indexed.session)
                self._session = indexed.session
                self._buffer.clear()
                self._state = State()
        if indexed.session != self._session:
            return []
        if indexed.index <= self._state.last_event_applied_idx:
            return []  # a duplicate
        self._buffer[indexed.index] = indexed
        applied = self._release_in_order()
        if self._buffer and not applied and self._on_gap is not None:
            self._on_gap(self._state.last_event_applied_idx + 1)
        if len(self._buffer) > _MAX_BUFFERED_EVENTS:
            self._buffer.pop(max(self._buffer))
        return applied

    def _release_in_order(self) -> list[IndexedEvent]:
        applied: list[IndexedEvent] = []
        while (next_index := self._state.last_event_applied_idx + 1) in self._buffer:
            indexed = self._buffer.pop(next_index)
            self._state = apply(self._state, indexed)
            applied.append(indexed)
        if applied:
            for listener in list(self._listeners):
                try:
                    for indexed in applied:
                        listener.send_nowait(indexed)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._listeners.remove(listener)  # its reader has gone
            self._changed.set()
            self._changed = anyio.Event()
        return applied

    async def wait_for(self, predicate: Callable[[State], bool], timeout: float) -> State | None:
        """The first state satisfying `predicate`, or None after `timeout` seconds."""
        with anyio.move_on_after(timeout):
            while not predicate(self._state):
                await self._changed.wait()
            return self._state
        return None
