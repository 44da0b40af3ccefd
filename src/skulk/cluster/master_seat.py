"""The master seat: runs this node's `Master` exactly while the election says it is master.

Re-election of a sitting master changes nothing; a node that wins takes over with a
session seeded from its own replica, so instances (and their runners) carry over. A
master that steps down with changes its minority side accepted sends them on to the
master that follows.
"""

from collections.abc import Set
from typing import Protocol

import anyio
from anyio.abc import TaskGroup
from loguru import logger

from skulk.cluster.minority_changes import send_when_following_another
from skulk.master.event_log import DiskEventLog
from skulk.master.master import Master
from skulk.master.session_seed import seed_for_new_session
from skulk.master.settings import MasterInbox, MasterSettings, MembersView
from skulk.models.catalog import ModelCatalog
from skulk.routing import topics
from skulk.routing.router import Router
from skulk.shared.channels import Sender
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import Command
from skulk.shared.types.events import IndexedBatch
from skulk.shared.types.ids import NodeId
from skulk.shared.types.state import State


class SeatMembers(MembersView, Protocol):
    """What the seat reads of membership: the master's view, and every member seen since
    start (a new session's seed keeps their instances)."""

    @property
    def seen(self) -> Set[NodeId]: ...


class MasterSeat:
    def __init__(
        self,
        *,
        node_id: NodeId,
        router: Router,
        catalog: ModelCatalog,
        telemetry: TelemetryView,
        event_log: DiskEventLog,
        replica: StateReplica,
        members: SeatMembers,
        indexed: Sender[IndexedBatch],
        commands: Sender[Command],
        settings: MasterSettings,
    ) -> None:
        self._node_id = node_id
        self._router = router
        self._catalog = catalog
        self._telemetry = telemetry
        self._event_log = event_log
        self._replica = replica
        self._members = members
        self._indexed = indexed
        self._commands = commands
        self._settings = settings
        self._tasks: TaskGroup | None = None
        self._scope: anyio.CancelScope | None = None
        self.master: Master | None = None
        self.terms = 0

    async def run(self) -> None:
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            await anyio.sleep_forever()

    def elected(self, master: NodeId) -> None:
        if master == self._node_id and self._scope is None:
            assert self._tasks is not None, "the seat is not running"
            self._scope = anyio.CancelScope()
            self._tasks.start_soon(self._serve, self._scope)
        elif master != self._node_id and self._scope is not None:
            logger.info("stepping down as master")
            self._scope.cancel()
            self._scope = None

    def _seed(self) -> State:
        if self._replica.session is None:
            return State()  # a fresh node has no view to carry
        return seed_for_new_session(self._replica.state, self._members.live,
                                    self._members.seen)

    async def _serve(self, scope: anyio.CancelScope) -> None:
        with scope:
            self.terms += 1
            self._event_log.start_session()
            router = self._router
            async with router.subscribe(topics.COMMANDS) as commands, \
                    router.subscribe(topics.LOCAL_EVENTS) as local_events, \
                    router.subscribe(topics.STATE_SYNC) as sync_requests:
                self.master = Master(
                    node_id=self._node_id, catalog=self._catalog, telemetry=self._telemetry,
                    event_log=self._event_log,
                    inbox=MasterInbox(commands=commands, local_events=local_events,
                                      sync_requests=sync_requests),
                    indexed=self._indexed, members=self._members, seed=self._seed(),
                    settings=self._settings, applied_ahead=self._replica.applied_ahead)
                try:
                    await self.master.run()
                finally:
                    if self.master.carried and self._tasks is not None:
                        self._tasks.start_soon(send_when_following_another,
                                               self.master.carried, self._replica,
                                               self._node_id, self._commands)
                    self.master = None
