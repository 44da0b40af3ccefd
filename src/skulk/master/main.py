"""The master: one order for every node's events, commands turned into events, reconcile."""

import time
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Protocol

import anyio
from loguru import logger

from skulk.master.commands import CommandContext, events_for_command
from skulk.master.reconcile import reconcile
from skulk.models.catalog import ModelCatalog
from skulk.shared.apply import apply
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import CommandEnvelope
from skulk.shared.types.events import (
    Event,
    IndexedEvent,
    LocalEvent,
    StateSnapshotHydrated,
    TaskDeleted,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import (
    CommandId,
    NodeId,
    SessionId,
    TaskId,
    new_runner_id,
    new_session_id,
    new_task_id,
)
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES

# Commands are deduplicated by id over this many recent commands (resends after a retry).
_SEEN_COMMANDS_CAP = 10_000


class EventSink(Protocol):
    """Where indexed events are persisted (the disk event log)."""

    def append(self, event: IndexedEvent) -> None: ...


class Master:
    """Indexes events from every origin into one order and acts on commands.

    Wired by channels: it reads commands and local events, and hands every indexed event
    to `publish`. All indexing goes through one lock, so the order is total.
    """

    def __init__(
        self,
        *,
        node_id: NodeId,
        catalog: ModelCatalog,
        telemetry: TelemetryView,
        event_log: EventSink,
        commands: AsyncIterable[CommandEnvelope],
        local_events: AsyncIterable[LocalEvent],
        publish: Callable[[IndexedEvent], Awaitable[None]],
        seed: State | None = None,
        session_id: SessionId | None = None,
        reconcile_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.node_id = node_id
        self.session_id = session_id or new_session_id()
        self._catalog = catalog
        self._telemetry = telemetry
        self._log = event_log
        self._commands = commands
        self._local_events = local_events
        self._publish = publish
        self._seed = seed or State()
        self._reconcile_interval = reconcile_interval
        self._clock = clock
        self._state = State()
        self._next_index = 0
        self._lock = anyio.Lock()
        self._last_origin_seq: dict[tuple[NodeId, str], int] = {}
        self._seen_commands: dict[CommandId, None] = {}
        self._terminal_since: dict[TaskId, float] = {}

    @property
    def state(self) -> State:
        return self._state

    async def run(self) -> None:
        # The session's first event is its seed, so every follower starts from the same state.
        await self.index([StateSnapshotHydrated(state=self._seed)])
        logger.info("master {} started session {}", self.node_id, self.session_id)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._command_loop)
            tasks.start_soon(self._local_event_loop)
            tasks.start_soon(self._reconcile_loop)

    async def index(self, events: list[Event]) -> None:
        """Give each event the next index, apply it, persist it and publish it."""
        async with self._lock:
            for event in events:
                indexed = IndexedEvent(index=self._next_index, session=self.session_id,
                                       event=event)
                self._state = apply(self._state, indexed)
                self._next_index += 1
                self._track_terminal(event)
                self._log.append(indexed)
                await self._publish(indexed)

    def _track_terminal(self, event: Event) -> None:
        if isinstance(event, TaskStatusUpdated) and event.status in TERMINAL_TASK_STATUSES:
            self._terminal_since.setdefault(event.task_id, self._clock())
        elif isinstance(event, TaskDeleted):
            self._terminal_since.pop(event.task_id, None)

    async def handle_command(self, envelope: CommandEnvelope) -> None:
        command = envelope.command
        if command.command_id in self._seen_commands:
            return
        self._seen_commands[command.command_id] = None
        if len(self._seen_commands) > _SEEN_COMMANDS_CAP:
            self._seen_commands.pop(next(iter(self._seen_commands)))
        context = CommandContext(catalog=self._catalog, nodes=self._telemetry.live(),
                                 new_runner_id=new_runner_id, new_task_id=new_task_id)
        events = events_for_command(self._state, command, context)
        if events:
            await self.index(events)

    async def handle_local_event(self, local: LocalEvent) -> None:
        # Producers number their events; a resend of one already indexed is dropped.
        producer = (local.origin, local.epoch)
        if local.origin_seq <= self._last_origin_seq.get(producer, -1):
            return
        self._last_origin_seq[producer] = local.origin_seq
        await self.index([local.event])

    async def _command_loop(self) -> None:
        async for envelope in self._commands:
            await self.handle_command(envelope)

    async def _local_event_loop(self) -> None:
        async for local in self._local_events:
            await self.handle_local_event(local)

    async def _reconcile_loop(self) -> None:
        while True:
            await anyio.sleep(self._reconcile_interval)
            events = reconcile(self._state, self._terminal_since, self._clock())
            if events:
                await self.index(events)
