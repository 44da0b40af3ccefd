"""The master: one order for every node's events, commands turned into events, reconcile.

A master session starts with its seed as event 0 and answers followers' snapshot and
replay requests. It runs only on the elected node; the node starts and stops it.

What is indexed together is published together: one `IndexedBatch` (one signature, one
check per follower) for a command's events, for the proposals or commands that were
ready in one turn (`ready_batches.py`), and for each stretch of a replay.
"""

import time
from collections import Counter
from collections.abc import AsyncIterable, Callable, Set
from functools import partial

import anyio
import anyio.lowlevel
from loguru import logger

from skulk.master.commands import CommandContext, delete_instance_events, events_for_command
from skulk.master.event_log import EventLog
from skulk.master.idle import IdleTracker
from skulk.master.local_event_order import LocalEventOrder
from skulk.master.local_event_rules import moot_local_event, refused_local_event
from skulk.master.model_card_commands import refused_card_sender
from skulk.master.ready_batches import handle_ready
from skulk.master.reconcile import (
    lost_past_grace,
    note_finished,
    reconcile,
    replacement_for,
)
from skulk.master.settings import MasterInbox, MasterSettings, MembersView
from skulk.master.sync_requests import SyncRequests, WantedSync
from skulk.models.catalog import ModelCatalog
from skulk.shared.applied_ahead import AppliedAhead
from skulk.shared.apply import apply
from skulk.shared.channels import Sender
from skulk.shared.partition import Standing, agreed_next, is_lasting
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import Command, CommandEnvelope
from skulk.shared.types.election import StateSyncMessage
from skulk.shared.types.event_source import EventSource
from skulk.shared.types.events import (
    Event,
    IndexedBatch,
    IndexedEvent,
    InstanceDeleted,
    LocalEvent,
    LocalEventBatch,
    MembershipAgreed,
    StateSnapshotHydrated,
)
from skulk.shared.types.ids import (
    CommandId,
    InstanceId,
    NodeId,
    TaskId,
    new_runner_id,
    new_session_id,
    new_task_id,
)
from skulk.shared.types.state import State

# Commands are deduplicated by id over this many recent commands (resends after a retry).
_SEEN_COMMANDS_CAP = 10_000
# A node must stay gone this long before its instances are re-placed elsewhere.
LOST_NODE_GRACE_SECONDS = 3.0
MAX_CARRIED_COMMANDS = 1000
# At most this many events go out under one signature (a replay is sent in such stretches),
# and at most this many ready proposals or commands are taken in one turn.
MAX_BATCH_EVENTS = 256
MAX_READY_COMMANDS = 64


class Master:
    """Indexes events from every origin into one order and acts on commands.

    Wired by channels: it reads its inbox (commands, local events, sync requests) and sends
    every indexed event on `indexed`, in batches of consecutive events. All indexing goes
    through one lock, so the order is total; what is staged under the lock is published
    before the lock is let go, so batches leave in index order.
    """

    def __init__(
        self,
        *,
        node_id: NodeId,
        catalog: ModelCatalog,
        telemetry: TelemetryView,
        event_log: EventLog,
        inbox: MasterInbox,
        indexed: Sender[IndexedBatch],
        members: MembersView | None = None,
        seed: State | None = None,
        settings: MasterSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        applied_ahead: AppliedAhead | None = None,
    ) -> None:
        """`applied_ahead`: where this node's replica takes the State after each event,
        rather than applying it again."""
        settings = settings or MasterSettings()
        self._settings = settings
        self._idle = IdleTracker(default_keep_alive=settings.keep_alive_seconds)
        self.refused_local_events: Counter[str] = Counter()
        self.moot_local_events = 0
        self.refused_commands: Counter[str] = Counter()
        # Lasting commands this master accepted while its side lacked a majority.
        self.carried: list[Command] = []
        self._missing_since: dict[NodeId, float] = {}
        self.node_id = node_id
        self.session_id = new_session_id()
        self._catalog = catalog
        self._telemetry = telemetry
        self._log = event_log
        self._inbox = inbox
        self._members = members
        self._indexed = indexed
        self._seed = seed or State()
        self._clock = clock
        self._applied_ahead = applied_ahead
        self._started_at = clock()
        self._state = State()
        self._next_index = 0
        # Taken without a yield when free: the publication that follows yields anyway.
        self._lock = anyio.Lock(fast_acquire=True)
        self._staged: list[IndexedEvent] = []  # indexed, not yet published (under the lock)
        self._local_order = LocalEventOrder(lambda: self._state.producer_marks)
        self._seen_commands: dict[CommandId, None] = {}
        self._terminal_since: dict[TaskId, float] = {}
        self._lost_since: dict[InstanceId, float] = {}

    @property
    def state(self) -> State:
        return self._state

    @property
    def events_indexed(self) -> int:
        return self._next_index

    async def run(self) -> None:
        # The session's first event is its seed, so every follower starts from the same state.
        await self.index([StateSnapshotHydrated(state=self._seed)])
        logger.info("master {} started session {} with {} carried instance(s)",
                    self.node_id, self.session_id, len(self._seed.instances))
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._command_loop)
            tasks.start_soon(self._local_event_loop)
            tasks.start_soon(self._reconcile_loop)
            if self._inbox.sync_requests is not None:
                tasks.start_soon(self._sync_loop, self._inbox.sync_requests)

    def live_nodes(self) -> Set[NodeId]:
        if self._members is not None:
            return self._members.live
        return set(self._telemetry.live())

    async def index(self, events: list[Event], source: EventSource | None = None) -> None:
        """Give each event the next index, apply it and persist it; publish them together."""
        async with self._lock:
            self._stage(events, source)
            await self._publish_staged()

    def _stage(self, events: list[Event], source: EventSource | None = None) -> None:
        """Index, apply and persist each event (under the lock); `_publish_staged` sends."""
        for event in events:
            _log_removal(self._state, event)
            indexed = IndexedEvent(index=self._next_index, session=self.session_id,
                                   master_node=self.node_id, event=event, source=source)
            self._state = apply(self._state, indexed)
            if self._applied_ahead is not None:
                self._applied_ahead.offer(indexed, self._state)
            self._next_index += 1
            note_finished(self._terminal_since, event, self._state, self._clock())
            self._idle.note(event, self._state, self._clock())
            self._log.append(indexed)
            self._staged.append(indexed)
            if self._next_index % self._settings.snapshot_every == 0:
                self._log.compact(self._snapshot())

    async def _publish_staged(self, *, turned: bool = False) -> None:
        """Send what was staged, in stretches of at most `MAX_BATCH_EVENTS` (under the
        lock, so batches leave in index order)."""
        staged, self._staged = self._staged, []
        await self._publish(staged, turned=turned)

    async def _publish(self, events: list[IndexedEvent], *, turned: bool = False) -> None:
        for start in range(0, len(events), MAX_BATCH_EVENTS):
            if start > 0 or not turned:  # `turned`: the loop just turned (ready_batches.py)
                await anyio.lowlevel.checkpoint()  # not to starve the node's readers
            await self._indexed.send(IndexedBatch(
                master_node=self.node_id, events=events[start:start + MAX_BATCH_EVENTS]))

    def _snapshot(self) -> IndexedEvent:
        """The State after the last indexed event, as an event of that index."""
        return IndexedEvent(index=self._next_index - 1, session=self.session_id,
                            master_node=self.node_id,
                            event=StateSnapshotHydrated(state=self._state))

    def standing(self) -> Standing:
        """This master's side of any partition, against the last agreed membership."""
        live = frozenset(self.live_nodes())
        # Only members heard from in the last round count: a token that outlives the link
        # must not make a cut-off side a majority.
        heard = live if self._members is None else live & frozenset(self._members.heard())
        return Standing(live=heard, agreed=frozenset(self._state.members))

    def _indexes_nothing(self) -> bool:
        return self._settings.quorum == "majority" and not self.standing().majority

    def _context(self) -> CommandContext:
        live = self.live_nodes()
        nodes = {n: r for n, r in self._telemetry.live().items() if n in live}
        # Placement reads the cards announced in the master's own State, which is ahead of
        # the node's replica.
        catalog = self._catalog.seeing(self._state.model_cards)
        return CommandContext(catalog=catalog, nodes=nodes, live_nodes=frozenset(live),
                              new_runner_id=new_runner_id, new_task_id=new_task_id,
                              now=time.time(), evictable=tuple(
                                  self._idle.least_recently_used(self._state, self._clock())))

    async def handle_command(self, envelope: CommandEnvelope) -> None:
        await self.handle_commands([envelope])

    async def handle_commands(self, envelopes: list[CommandEnvelope], *,
                              turned: bool = False) -> None:
        """Each command in turn (each sees the State its predecessors left), their events
        published together (`turned`: the loop has just turned, see `_publish`)."""
        async with self._lock:
            for envelope in envelopes:
                events = self._events_for_command(envelope)
                if events:
                    self._stage(events)
            await self._publish_staged(turned=turned)

    def _events_for_command(self, envelope: CommandEnvelope) -> list[Event]:
        command = envelope.command
        if command.command_id in self._seen_commands:
            return []
        self._seen_commands[command.command_id] = None
        if len(self._seen_commands) > _SEEN_COMMANDS_CAP:
            self._seen_commands.pop(next(iter(self._seen_commands)))
        if self._indexes_nothing():
            return []  # the API nodes on this side refuse what would start something
        refused = None if envelope.origin == self.node_id else refused_card_sender(
            self._state, envelope)
        if refused is not None:
            self.refused_commands[refused] += 1
            logger.warning("refused a command from {}: {}", envelope.origin, refused)
            return []
        events = events_for_command(self._state, command, self._context())
        if events and is_lasting(command) and not self.standing().majority:
            # Accepted on a minority side: sent again to the majority's master at heal.
            self.carried = [*self.carried[-(MAX_CARRIED_COMMANDS - 1):], command]
        return events

    async def handle_local_event(self, local: LocalEvent) -> None:
        await self.handle_local_events([local])

    async def handle_local_events(self, proposals: list[LocalEvent], *,
                                  turned: bool = False) -> None:
        """Index each proposal that is next in its producer's order; publish together."""
        if self._indexes_nothing():
            return  # its producer resends it until a master with a majority indexes it
        async with self._lock:
            for local in proposals:
                for ready in self._local_order.arrive(local, self._clock()):
                    self._stage_local(ready)
            await self._publish_staged(turned=turned)

    def _stage_local(self, local: LocalEvent) -> None:
        # This node's own proposals are as trusted as the master that indexes them.
        refused = None if local.origin == self.node_id else refused_local_event(
            self._state, local)
        if refused is not None:
            self.refused_local_events[refused] += 1
            logger.warning("refused a local event from {}: {}", local.origin, refused)
            return
        if moot_local_event(self._state, local):
            self.moot_local_events += 1  # a finished task's status: nothing to index
            return
        source = EventSource(origin=local.origin, epoch=local.epoch,
                             origin_seq=local.origin_seq)
        self._stage([local.event], source)

    async def handle_sync(self, request: StateSyncMessage) -> None:
        """Answer one request at once (the sync loop gathers them, `answer_sync`)."""
        gathered = SyncRequests(self.session_id)
        gathered.add(request)
        await self.answer_sync(gathered.take())

    async def answer_sync(self, wanted: WantedSync) -> None:
        """Replay from the log when only replays were asked and the log has the range;
        otherwise a snapshot."""
        async with self._lock:
            last = self._next_index - 1
            start = wanted.replay_from
            if not wanted.snapshot and start is not None:
                if start >= self._next_index:
                    return  # every asker already has everything
                replay = self._log.read_range(start, self._next_index)
                if replay and replay[0].index == start and replay[-1].index == last:
                    await self._publish(replay)
                    return
            # A snapshot carries the state after `last`: followers at `last` or beyond
            # drop it as a duplicate; a late or lagging follower adopts it.
            await self._publish([self._snapshot()])

    async def _command_loop(self) -> None:
        await handle_ready(self._inbox.commands, partial(self.handle_commands, turned=True),
                           most=MAX_READY_COMMANDS)

    async def _local_event_loop(self) -> None:  # each batch read, indexed, sent in one step
        await handle_ready(self._inbox.local_events,
                           partial(self.handle_proposal_batches, turned=True),
                           most=MAX_BATCH_EVENTS)

    async def handle_proposal_batches(self, batches: list[LocalEventBatch], *,
                                      turned: bool = False) -> None:
        """Every proposal of the batches that were ready together, as one."""
        await self.handle_local_events(
            [local for batch in batches for local in batch.events], turned=turned)

    async def _sync_loop(self, requests: AsyncIterable[StateSyncMessage]) -> None:
        gathered = SyncRequests(self.session_id)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._answer_gathered, gathered)
            async for request in requests:
                gathered.add(request)

    async def _answer_gathered(self, gathered: SyncRequests) -> None:
        """One answer per period, however many followers asked in it."""
        while True:
            await gathered.wait()
            await anyio.sleep(self._settings.sync_batch_seconds)
            await self.answer_sync(gathered.take())

    async def _reconcile_loop(self) -> None:
        while True:
            await anyio.sleep(self._settings.reconcile_interval)
            await self.reconcile_once()

    async def reconcile_once(self) -> None:
        if self._indexes_nothing():
            return
        async with self._lock:
            for overdue in self._local_order.overdue(self._clock()):
                self._stage_local(overdue)
            await self._publish_staged()
        events = reconcile(self._state, self._terminal_since, self._clock())
        if events:
            await self.index(events)
        if self.standing().majority:  # only a majority redraws the membership
            await self._agree_on_membership()
        if self._clock() - self._started_at >= self._settings.settle_grace_seconds:
            await self._replace_lost_instances()
        if self.standing().majority:  # a minority side keeps what it holds
            await self._remove_idle_instances()

    async def _remove_idle_instances(self) -> None:
        """Instances that served nothing for their keep-alive are removed."""
        now = self._clock()
        for instance in self._idle.expired(self._state, now):
            await self.index(delete_instance_events(
                self._state, instance.instance_id,
                self._idle.expiry_reason(instance.instance_id, now)))

    async def _agree_on_membership(self) -> None:
        now, live = self._clock(), self.live_nodes()
        agreed = set(self._state.members)
        self._missing_since = {node: self._missing_since.get(node, now)
                               for node in agreed - set(live)}
        members = agreed_next(agreed, live, self._missing_since, now, LOST_NODE_GRACE_SECONDS)
        if members is not None:
            logger.info("the cluster's agreed membership is now {}", sorted(members))
            await self.index([MembershipAgreed(members=sorted(members))])

    async def _replace_lost_instances(self) -> None:
        """Instances with a shard on a departed node are removed and placed again, unless
        another instance of the model is left."""
        for instance in lost_past_grace(self._state, self.live_nodes(), self._lost_since,
                                        self._clock(), LOST_NODE_GRACE_SECONDS):
            events = delete_instance_events(self._state, instance.instance_id,
                                            "a node holding it left the cluster")
            await self.index(events)
            if self._state.instances_of(instance.model_id):
                logger.warning("instance {} lost a node; another instance of {} is left",
                               instance.instance_id, instance.model_id)
                continue  # another instance serves it (a failing-over request placed one)
            logger.warning("instance {} lost a node; placing {} again", instance.instance_id,
                           instance.model_id)
            await self.index(events_for_command(self._state, replacement_for(instance),
                                                self._context()))


def _log_removal(before: State, event: Event) -> None:
    """Every removal is logged with the reason it carries, whichever path removed it."""
    if isinstance(event, InstanceDeleted) and event.instance_id in before.instances:
        logger.info("instance {} of {} removed: {}", event.instance_id,
                    before.instances[event.instance_id].model_id, event.reason)
