"""One Skulk node: router, state replica, master, worker and API, wired by channels.

Even a lone node runs the whole path: its worker's events go to its master through the
router, and its API hears its own master's indexed events through the router too.
"""

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TypeVar

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel

from skulk.api.app import create_app
from skulk.api.context import ApiContext
from skulk.api.data_plane import DataPlaneReceiver
from skulk.api.log_buffer import LogBuffer
from skulk.api.metrics import NodeCounters
from skulk.api.peer_reads import PEER_READ_SERVICE, peer_read_handler
from skulk.api.routers.diagnostics import node_diagnostics
from skulk.api.server import serve_api
from skulk.api.stream_failures import end_failed_streams, fail_streams_served_by
from skulk.api.streams import StreamRegistry
from skulk.api.tracing import TraceStore
from skulk.cluster.election import Election
from skulk.cluster.local_events import LocalEventSender
from skulk.cluster.master_seat import MasterSeat
from skulk.cluster.membership import Membership
from skulk.cluster.minority_changes import send_when_following_another
from skulk.cluster.reachability import ReachabilityProber
from skulk.cluster.replica_sync import ReplicaSync
from skulk.cluster.store_cards import StoreWatcher
from skulk.master.event_log import DiskEventLog
from skulk.master.event_log_restore import note_followed_session, restore_from_log
from skulk.models.catalog import ModelCatalog
from skulk.node_config import NodeConfig
from skulk.node_identity import load_or_create_identity
from skulk.node_links import NodeLinks
from skulk.node_side_channels import device_links, node_weights, revoked_members
from skulk.node_weights import NodeWeights
from skulk.routing import topics
from skulk.routing.dropped import DroppedMessages
from skulk.routing.held_open import Closable, open_in
from skulk.routing.router import Received, Router
from skulk.routing.transport import Transport
from skulk.shared.partition import refuse_on_a_strict_minority
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import Command, CommandEnvelope, PlaceInstance
from skulk.shared.types.drafting import DRAFT_SERVICE
from skulk.shared.types.events import Event, NodeRevoked, StateSnapshotHydrated
from skulk.shared.types.ids import ModelId, NodeId, RunnerId, new_command_id, new_instance_id
from skulk.shared.types.telemetry import GpuDevice, NodeTelemetry
from skulk.shared.types.traces import RankSpans
from skulk.trust.revocations import save_revoked
from skulk.trust.setup import NodeTrust, admit_with_token, trust_at_start
from skulk.versions import versions
from skulk.worker.draft_service import ADVERTISED_DRAFTERS, DraftService
from skulk.worker.engine_threads import engine_threads_here
from skulk.worker.engines.llama_cpp.description import built_ggml_version
from skulk.worker.engines.node_options import EngineLimits
from skulk.worker.gpus import probe_gpus, refresh_gpus_forever
from skulk.worker.local_runner import SupervisorFactory
from skulk.worker.remote_drafting import remote_drafting_options
from skulk.worker.runner.deadlines import RunnerDeadlines
from skulk.worker.runner.supervisor import RunnerSupervisor
from skulk.worker.telemetry import probe_backends, publish_readings_forever, read_telemetry
from skulk.worker.worker import Worker

T = TypeVar("T", bound=BaseModel)
U = TypeVar("U")


class Node:
    """Builds its parts in `run`, so constructing one does no I/O."""

    def __init__(
        self,
        config: NodeConfig,
        transport: Transport,
        *,
        trust: NodeTrust | None = None,
        supervisor_factory: SupervisorFactory = RunnerSupervisor,
        logs: LogBuffer | None = None,
    ) -> None:
        self.config = config
        self.logs = logs or LogBuffer()  # what `skulk run`'s loguru sink keeps, for the API
        self.stop_requested = anyio.Event()  # set by `POST /v1/node/stop`
        self._transport = transport
        self._given_trust = trust
        self.trust: NodeTrust | None = None
        self.dropped = DroppedMessages()
        self._supervisor_factory = supervisor_factory
        self._epoch = secrets.token_hex(6)
        self.node_id = NodeId("")
        self.public_key = ""
        self.replica = StateReplica(on_gap=lambda index: self._sync.note_gap(index))
        self.members = Membership()
        self.election: Election | None = None
        self.seat: MasterSeat | None = None
        self._local_events: LocalEventSender | None = None
        self._worker: Worker | None = None
        self.telemetry = TelemetryView()
        self._draft_service = DraftService()
        self.streams = StreamRegistry(idle_timeout=config.stream_idle_timeout)
        self.traces = TraceStore()
        self._data_plane = DataPlaneReceiver(streams=self.streams, traces=self.traces,
                                             dropped=self.dropped)
        self.ready = anyio.Event()
        self._router: Router | None = None
        self.prober: ReachabilityProber | None = None
        self.links: NodeLinks | None = None  # endpoints and isolation, in every reading
        self._backends: list[str] = []  # engines this machine can run, probed in `run`
        self._gpus: list[GpuDevice] = []  # a worker's GPUs, probed in `run`, then refreshed
        self._event_log_dir: Path | None = None
        self._tasks: TaskGroup | None = None
        self._weights: NodeWeights | None = None  # a worker node's store, served to peers
        self._engine_limits = EngineLimits.of(config.engine_options, config.batching)

    @property
    def router(self) -> Router:
        assert self._router is not None, "the node is not running"
        return self._router

    async def run(self) -> None:
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        identity = load_or_create_identity(self.config.data_dir)
        self.node_id = identity.node_id
        self._sync = ReplicaSync(
            node_id=self.node_id, replica=self.replica, master_node=lambda: self.master_node,
            publish=lambda message: self.router.publish(topics.STATE_SYNC, message))
        self.public_key = identity.public_key_hex
        trust = self.trust = self._given_trust or await trust_at_start(
            self.config.data_dir, identity, insecure=self.config.insecure,
            join=self.config.join, peers=self.config.peers, cluster_name=self.config.namespace)
        trust.verifier.is_revoked = lambda node: node in self.replica.state.revoked_nodes
        if self.config.run_worker:
            self._gpus = await anyio.to_thread.run_sync(probe_gpus)
        self._backends = probe_backends(gpus=self._gpus)
        self.telemetry.set_own_node(self.node_id)
        self.members.live = {self.node_id}
        self._router = Router(self._transport, namespace=self.config.namespace,
                              signer=trust.signer, verifier=trust.verifier,
                              dropped=self.dropped)
        self._local_events = LocalEventSender(
            node_id=self.node_id, epoch=self._epoch,
            publish=lambda local: self.router.publish(topics.LOCAL_EVENTS, local))
        catalog = ModelCatalog.builtin(self.config.data_dir / "models")
        # Cards other nodes announced are as placeable and listable as built-in ones.
        catalog.follow_cluster(lambda: self.replica.state.model_cards)
        event_log = DiskEventLog(self.config.data_dir / "event_log")
        self._event_log_dir = event_log.directory
        restored = restore_from_log(event_log.directory, self.node_id)
        if restored is not None:
            self.replica.restore(restored.state, restored.session, restored.master_node)
        self.seat = MasterSeat(
            node_id=self.node_id, router=self.router, catalog=catalog,
            telemetry=self.telemetry, event_log=event_log, replica=self.replica,
            live_nodes=lambda: self.members.live, seen_members=lambda: self.members.seen,
            heard=lambda: self.members.heard(self.election),
            publish=lambda indexed: self.router.publish(topics.GLOBAL_EVENTS, indexed),
            settle_grace_seconds=self.config.settle_grace_seconds, quorum=self.config.quorum,
            carry_over=self._carry_over, keep_alive_seconds=self.config.keep_alive_seconds)
        self.election = Election(
            node_id=self.node_id, on_result=self._elected,
            publish=lambda message: self.router.publish(topics.ELECTION, message),
            commands_seen=lambda: self.replica.state.last_event_applied_idx + 1,
            force_master=self.config.force_master, timeout=self.config.election_timeout,
            on_rejected=lambda reason: self.dropped.count("election", reason, 0))
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                await admit_with_token(tasks, trust, self.config.listen,
                                       self.config.admit_port, self.config.data_dir)
                await self._start_listeners(tasks)
                tasks.start_soon(self.seat.run)
                self.router.announce_membership()
                membership: AsyncIterator[tuple[NodeId, bool]] = await self._open(
                    tasks, self.router.membership())
                election_messages = await self._subscription(tasks, topics.ELECTION)
                tasks.start_soon(self.election.run, self.members.follow(
                    membership, own=self.node_id,
                    revoked=lambda: self.replica.state.revoked_nodes,
                    on_gone=lambda node: fail_streams_served_by(node, self.replica.state,
                                                                self.streams)),
                    election_messages)
                prober = self.prober = ReachabilityProber(node_id=self.node_id,
                                                          peers=self.telemetry.live)
                tasks.start_soon(prober.run, self._transport,
                                 self.config.api_port if self.config.run_api else None)
                self.links = NodeLinks(
                    node_id=self.node_id, config=self.config, trust=trust,
                    live=lambda: self.members.live, agreed=lambda: self.replica.state.members,
                    readings=self.telemetry.live,
                    own_addresses=lambda: prober.reachability().addresses,
                    publish=lambda reading: self.router.publish(topics.TELEMETRY, reading))
                tasks.start_soon(self.links.run, self._transport)
                tasks.start_soon(publish_readings_forever, self._own_reading, self.telemetry,
                                 lambda reading: self.router.publish(topics.TELEMETRY, reading))
                tasks.start_soon(self._sync.run, self._local_events)
                # Only a worker node announces its store: its weights serve placements.
                tasks.start_soon(StoreWatcher(
                    node_id=self.node_id, catalog=catalog,
                    state=lambda: self.replica.state,
                    following=lambda: self.replica.session is not None,
                    send_command=self.send_command, announce=self.config.run_worker).run)
                if self.config.run_worker:
                    revoked = revoked_members(self.config.data_dir,
                                              lambda: self.replica.state.revoked_nodes)
                    weights = self._weights = node_weights(
                        self.node_id, self.config.data_dir, self.config.listen, trust.tls,
                        revoked, self.telemetry.live)
                    await tasks.start(weights.serve)
                    worker = self._worker = Worker(
                        node_id=self.node_id, replica=self.replica, catalog=catalog,
                        publish_event=self.publish_local_event,
                        publish_chunk=self._publish_chunk, send_command=self.send_command,
                        supervisor_factory=self._supervisor_factory,
                        engine_threads=self.config.engine_threads
                        or engine_threads_here(self.config.run_api),
                        batching=self.config.batching,
                        node_engine_options=self.config.engine_options,
                        read_own=self._read_own_memory, publish_spans=self._publish_spans,
                        remote_drafting=self._remote_drafting_options,
                        weight_sources=weights.sources_for,
                        deadlines=RunnerDeadlines.scaled(self.config.runner_deadline_seconds),
                        device_links=device_links(self.config.data_dir, self.config.listen,
                                                  trust.tls, revoked))
                    tasks.start_soon(worker.run)
                    if self._gpus:  # their free memory changes as runners load
                        tasks.start_soon(refresh_gpus_forever, self._keep_gpus)
                    # Any worker node drafts for other nodes' runners (prompt lookup).
                    self.router.answer(DRAFT_SERVICE, self._draft_service.handle)
                if self.config.run_api:
                    tasks.start_soon(self._serve_api, catalog)
                await self.replica.wait_for(lambda s: self.replica.session is not None, 60.0)
                for model in self.config.serve:
                    if not self.replica.state.instances_of(ModelId(model)):
                        await self.send_command(PlaceInstance(
                            command_id=new_command_id(), instance_id=new_instance_id(),
                            model_id=ModelId(model), pinned=True))
                self.ready.set()
        finally:
            event_log.close()

    @property
    def master_node(self) -> NodeId | None:
        return None if self.election is None else self.election.master

    async def _elected(self, master: NodeId) -> None:
        self.replica.follow_master(master)
        self._sync.catch_up()
        assert self.seat is not None
        self.seat.elected(master)

    async def _subscription(self, tasks: TaskGroup, topic: topics.TypedTopic[T]
                            ) -> AsyncIterator[T]:
        return await self._open(tasks, self.router.subscribe(topic))

    async def _open(self, tasks: TaskGroup, subscription: Closable[U]) -> AsyncIterator[U]:
        """Hold `subscription` open in the task group; its values are read elsewhere."""
        return await open_in(tasks, subscription)

    async def _start_listeners(self, tasks: TaskGroup) -> None:
        global_events = await self._subscription(tasks, topics.GLOBAL_EVENTS)
        tasks.start_soon(self.replica.run, global_events)
        telemetry = await self._subscription(tasks, topics.TELEMETRY)
        tasks.start_soon(self.telemetry.follow, telemetry)
        data = await self._open(tasks, self.router.subscribe_with_origin(topics.DATA))
        tasks.start_soon(self._data_plane.receive_chunks, data, lambda: self.replica.state)
        rank_spans = await self._open(tasks,
                                      self.router.subscribe_with_origin(topics.TRACE_SPANS))
        tasks.start_soon(self._data_plane.receive_spans, rank_spans,
                         lambda: self.replica.state)
        tasks.start_soon(self._react_to_applied_events, tasks)

    def runner_pid(self, runner_id: RunnerId) -> int | None:
        return None if self._worker is None else self._worker.runner_pid(runner_id)

    async def send_command(self, command: Command) -> None:
        await self.router.publish(topics.COMMANDS,
                                  CommandEnvelope(origin=self.node_id, command=command))

    def _carry_over(self, commands: list[Command]) -> None:
        assert self._tasks is not None
        self._tasks.start_soon(send_when_following_another, commands, self.replica,
                               self.node_id, self.send_command)

    async def _send_user_command(self, command: Command) -> None:
        """A command from the API; under `--quorum majority` a side without a majority
        refuses it here, since its master indexes nothing."""
        refuse_on_a_strict_minority(command, self.config.quorum,
                                    self.members.heard(self.election),
                                    self.replica.state.members)
        await self.send_command(command)

    async def publish_local_event(self, event: Event) -> None:
        assert self._local_events is not None
        await self._local_events.send(event)

    async def _publish_chunk(self, chunk: DataChunk) -> None:
        if chunk.owner_node == self.node_id:  # taken here: no sealing, loopback, opening
            self._data_plane.take_chunk(Received(self.node_id, chunk), self.replica.state)
        else:
            await self.router.publish(topics.DATA, chunk)

    async def _publish_spans(self, spans: RankSpans) -> None:
        await self.router.publish(topics.TRACE_SPANS, spans)

    def _read_own_memory(self) -> NodeTelemetry:
        """This node's memory now, for the worker's fit guard."""
        return read_telemetry(self.node_id, has_worker=True, backends=self._backends,
                              data_dir=self.config.data_dir, gpus=self._gpus,
                              memory_limit=self.config.memory_limit_bytes,
                              limits=self._engine_limits)

    def _keep_gpus(self, gpus: list[GpuDevice]) -> None:
        self._gpus = gpus

    async def _remote_drafting_options(self, drafter_node: NodeId) -> dict[str, str]:
        data_dir = self.config.data_dir if self.trust is not None and self.trust.secure \
            else None
        return await remote_drafting_options(self._transport, self.router, drafter_node,
                                             data_dir)

    def _own_reading(self) -> NodeTelemetry:
        worker = self.config.run_worker
        reading = read_telemetry(
            self.node_id, has_worker=worker, backends=self._backends if worker else [],
            data_dir=self.config.data_dir,
            warm=[] if self._worker is None else self._worker.warm_models(),
            drafters=ADVERTISED_DRAFTERS if worker else [],
            models_dir=self.config.data_dir / "models" if worker else None,
            weights_port=None if self._weights is None else self._weights.port,
            gpus=self._gpus, memory_limit=self.config.memory_limit_bytes,
            reachability=self.prober.reachability() if self.prober is not None else None,
            limits=self._engine_limits if worker else None)
        return reading if self.links is None else self.links.stamp(reading)

    async def _react_to_applied_events(self, tasks: TaskGroup) -> None:
        """Applied events acknowledge our local events, and control-plane failures end the
        streams they concern."""
        async with self.replica.subscribe() as applied:
            async for indexed in applied:
                if self._local_events is not None:
                    self._local_events.acknowledge(self.replica.state)
                end_failed_streams(indexed.event, self.replica.state, self.streams, tasks)
                self._data_plane.state_changed(self.replica.state)
                if isinstance(indexed.event, NodeRevoked):
                    self._expel(indexed.event.node_id)
                if isinstance(indexed.event, StateSnapshotHydrated) and \
                        self._event_log_dir is not None:
                    note_followed_session(self._event_log_dir, indexed.session)

    def _expel(self, node: NodeId) -> None:
        """A revoked member leaves membership now, and its links are refused from the next
        start."""
        save_revoked(self.config.data_dir, list(self.replica.state.revoked_nodes))
        if self.members.expel(node, self.node_id) and self.election is not None:
            self.election.membership_changed(node, False)

    def _counters(self) -> NodeCounters:
        master = self.seat.master if self.seat is not None else None
        return NodeCounters(
            open_streams=len(self.streams.open_commands()),
            elections=self.election.campaigns if self.election is not None else 0,
            runner_failures=self._worker.runner_failures if self._worker is not None else 0,
            events_indexed=master.events_indexed if master is not None else 0,
            live_nodes=len(self.members.live), is_master=self.master_node == self.node_id,
            dropped_messages=dict(self.dropped.counts))

    async def _serve_api(self, catalog: ModelCatalog) -> None:
        context = ApiContext(node_id=self.node_id, public_key=self.public_key,
                             secure=self.trust is not None and self.trust.secure,
                             quorum=self.config.quorum, catalog=catalog, replica=self.replica,
                             telemetry=self.telemetry, streams=self.streams, traces=self.traces,
                             send_command=self._send_user_command,
                             auto_place=self.config.auto_place,
                             max_queue=self.config.max_queue, max_tokens=self.config.max_tokens,
                             queue_timeout_seconds=self.config.queue_timeout_seconds,
                             live_nodes=lambda: self.members.live,
                             master_node=lambda: self.master_node,
                             runners_report=lambda: (self._worker.runners_report()
                                                     if self._worker is not None else []),
                             ask_peer=lambda node, path, timeout: self.router.ask(
                                 PEER_READ_SERVICE, node, path, timeout),
                             versions=lambda: versions(built_ggml_version()),
                             logs=self.logs, request_stop=self.stop_requested.set)
        context.metrics.watch_node(self._counters, lambda: self.replica.state)
        self.router.answer_signed(PEER_READ_SERVICE, peer_read_handler(
            context, asyncio.get_running_loop(), node_diagnostics))
        await serve_api(create_app(context, self.config.security), self.config.api_host,
                        self.config.api_port)

