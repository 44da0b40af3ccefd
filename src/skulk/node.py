"""One Skulk node: router, state replica, master seat, worker and API, wired by channels.

Each part is handed the ends it sends on (`node_channels.py`), the streams it reads and
read-only views of the rest; none calls back into the node. docs/architecture.md ("How a
node is wired") lists every channel. Even a lone node runs the whole path: its worker's
events reach its master through the router, and its API hears its own master's indexed
events through the router too, handed over in-process: only what goes to other nodes is
encoded and sealed.
"""

import secrets
from functools import partial

import anyio

from skulk.api.data_plane import DataPlaneReceiver
from skulk.api.log_buffer import LogBuffer
from skulk.api.streams import StreamRegistry
from skulk.api.tracing import TraceStore
from skulk.cluster.election import Election
from skulk.cluster.local_events import LocalEventSender
from skulk.cluster.master_seat import MasterSeat
from skulk.cluster.membership import Membership
from skulk.cluster.quorum_gate import QuorumGate
from skulk.cluster.reachability import ReachabilityProber
from skulk.cluster.replica_sync import ReplicaSync
from skulk.cluster.served_models import place_served_models
from skulk.cluster.store_cards import StoreWatcher
from skulk.master.event_log import DiskEventLog
from skulk.master.event_log_restore import restore_from_log
from skulk.models.catalog import ModelCatalog
from skulk.node_api import NodeParts, serve_node_api
from skulk.node_channels import NodeChannels, receive_planes
from skulk.node_config import NodeConfig
from skulk.node_identity import load_or_create_identity
from skulk.node_links import NodeLinks
from skulk.node_reactions import (
    end_streams_of_departed,
    follow_elections,
    react_to_applied_events,
)
from skulk.node_readings import NodeMachine, OwnReadings
from skulk.node_settings import master_settings
from skulk.node_worker import start_worker
from skulk.routing import topics
from skulk.routing.dropped import DroppedMessages
from skulk.routing.held_open import open_in
from skulk.routing.router import Router
from skulk.routing.transport import Transport
from skulk.shared.channels import channel
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.ids import NodeId
from skulk.trust.setup import NodeTrust, admit_with_token, trust_at_start
from skulk.worker.gpus import probe_gpus
from skulk.worker.local_runner import SupervisorFactory
from skulk.worker.runner.supervisor import RunnerSupervisor
from skulk.worker.telemetry import probe_backends


class Node:
    """Builds its parts in `run`, so constructing one does no I/O. What a caller may read
    while it runs: its identity, replica, telemetry, membership, election, master seat
    and links; `ready` is set once it follows a master and placed its `--serve` models."""

    def __init__(self, config: NodeConfig, transport: Transport, *,
                 trust: NodeTrust | None = None,
                 supervisor_factory: SupervisorFactory = RunnerSupervisor,
                 logs: LogBuffer | None = None, local_delivery: bool = True) -> None:
        """`local_delivery` off: the node's own commands and events round-trip through
        the transport, sealed and verified (tests compare both ways; see `Router`)."""
        self.config = config
        self.logs = logs or LogBuffer()  # what `skulk run`'s loguru sink keeps, for the API
        self.stop_requested = anyio.Event()  # set by `POST /v1/node/stop`
        self.ready = anyio.Event()
        self.dropped = DroppedMessages()
        self.replica = StateReplica()
        self.telemetry = TelemetryView()
        self.streams = StreamRegistry(idle_timeout=config.stream_idle_timeout)
        self.traces = TraceStore()
        self.node_id = NodeId("")
        self.public_key = ""
        self.trust: NodeTrust | None = None
        self.election: Election | None = None
        self._members: Membership | None = None
        self.seat: MasterSeat | None = None
        self.links: NodeLinks | None = None  # endpoints and isolation, in every reading
        # Where this node's worker proposes its events (benchmarks propose through it too).
        self.local_events: LocalEventSender | None = None
        self._transport = transport
        self._given_trust = trust
        self._supervisor_factory = supervisor_factory
        self._local_delivery = local_delivery

    @property
    def members(self) -> Membership:
        assert self._members is not None, "the node is not running"
        return self._members

    @property
    def master_node(self) -> NodeId | None:
        return None if self.election is None else self.election.master

    async def run(self) -> None:
        config, replica, transport = self.config, self.replica, self._transport
        config.data_dir.mkdir(parents=True, exist_ok=True)
        identity = load_or_create_identity(config.data_dir)
        node_id = self.node_id = identity.node_id
        self.public_key = identity.public_key_hex
        trust = self.trust = self._given_trust or await trust_at_start(
            config.data_dir, identity, insecure=config.insecure, join=config.join,
            peers=config.peers, cluster_name=config.namespace)
        trust.verifier.is_revoked = lambda node: node in replica.state.revoked_nodes
        gpus = await anyio.to_thread.run_sync(probe_gpus) if config.run_worker else []
        machine = NodeMachine(node_id, config, backends=probe_backends(gpus=gpus), gpus=gpus)
        self.telemetry.set_own_node(node_id)
        router = Router(transport, namespace=config.namespace, signer=trust.signer,
                        verifier=trust.verifier, dropped=self.dropped,
                        local_delivery=self._local_delivery)
        out = NodeChannels.on(router, node_id)
        catalog = ModelCatalog.builtin(config.data_dir / "models")
        # Cards other nodes announced are as placeable and listable as built-in ones.
        catalog.follow_cluster(lambda: replica.state.model_cards)
        event_log = DiskEventLog(config.data_dir / "event_log")
        restored = restore_from_log(event_log.directory, node_id)
        if restored is not None:
            replica.restore(restored.state, restored.session, restored.master_node)
        elected, election_results = channel(NodeId)
        election = self.election = Election(
            node_id=node_id, votes=out.election, results=elected,
            commands_seen=replica.next_index, force_master=config.force_master,
            timeout=config.election_timeout,
            on_rejected=partial(self.dropped.count, "election", size=0))
        members = self._members = Membership(node_id, election)
        local_events = self.local_events = LocalEventSender(
            node_id=node_id, epoch=secrets.token_hex(6), published=out.local_events)
        sync = ReplicaSync(node_id=node_id, replica=replica, election=election,
                           requests=out.sync)
        seat = self.seat = MasterSeat(
            node_id=node_id, router=router, catalog=catalog, telemetry=self.telemetry,
            event_log=event_log, replica=replica, members=members, indexed=out.indexed,
            commands=out.commands, settings=master_settings(config))
        prober = ReachabilityProber(node_id=node_id, peers=self.telemetry.live)
        links = self.links = NodeLinks(
            node_id=node_id, config=config, trust=trust, members=members, replica=replica,
            telemetry=self.telemetry, prober=prober, readings=out.readings)
        data_plane = DataPlaneReceiver(streams=self.streams, traces=self.traces,
                                       dropped=self.dropped)
        try:
            async with anyio.create_task_group() as tasks:
                await admit_with_token(tasks, trust, config.listen, config.admit_port,
                                       config.data_dir)
                await receive_planes(tasks, router, replica=replica, telemetry=self.telemetry,
                                     data_plane=data_plane)
                tasks.start_soon(partial(
                    react_to_applied_events, replica=replica, local_events=local_events,
                    streams=self.streams, data_plane=data_plane, members=members,
                    data_dir=config.data_dir, event_log_dir=event_log.directory,
                    tasks=tasks))
                tasks.start_soon(seat.run)
                tasks.start_soon(partial(follow_elections, election_results, replica=replica,
                                         sync=sync, seat=seat))
                router.announce_membership()
                liveliness = await open_in(tasks, router.membership())
                votes = await open_in(tasks, router.subscribe(topics.ELECTION))
                departed, departures = channel(NodeId)
                tasks.start_soon(election.run, members.follow(
                    liveliness, replica=replica, departures=departed), votes)
                tasks.start_soon(partial(end_streams_of_departed, departures,
                                         replica=replica, streams=self.streams))
                tasks.start_soon(prober.run, transport,
                                 config.api_port if config.run_api else None)
                tasks.start_soon(links.run, transport)
                tasks.start_soon(local_events.run)
                tasks.start_soon(sync.run, local_events)
                # Only a worker node announces its store: its weights serve placements.
                tasks.start_soon(StoreWatcher(node_id=node_id, catalog=catalog,
                                              replica=replica, commands=out.commands,
                                              announce=config.run_worker).run)
                worker, weights = await start_worker(
                    tasks, config=config, machine=machine, trust=trust, transport=transport,
                    router=router, channels=out, local_events=local_events, replica=replica,
                    telemetry=self.telemetry, catalog=catalog, data_plane=data_plane,
                    supervisor_factory=self._supervisor_factory
                ) if config.run_worker else (None, None)
                readings = OwnReadings(machine, prober=prober, links=links, worker=worker,
                                       weights=weights)
                tasks.start_soon(readings.publish_forever, self.telemetry, out.readings)
                if config.run_api:
                    tasks.start_soon(serve_node_api, NodeParts(
                        node_id=node_id, public_key=self.public_key, secure=trust.secure,
                        catalog=catalog, replica=replica, telemetry=self.telemetry,
                        streams=self.streams, traces=self.traces, members=members,
                        election=election, seat=seat, worker=worker, dropped=self.dropped,
                        logs=self.logs, stop_requested=self.stop_requested,
                        commands=QuorumGate(out.commands, quorum=config.quorum,
                                            members=members, replica=replica)),
                        config, router)
                await place_served_models(config.serve, replica, out.commands)
                self.ready.set()
        finally:
            event_log.close()
