"""A worker node's worker and what it offers the cluster beside it: its stored weights
served to members, its GPUs watched, and prompt-lookup drafting for other nodes' runners."""

from functools import partial

from anyio.abc import TaskGroup

from skulk.api.data_plane import ChunkSender, DataPlaneReceiver
from skulk.cluster.local_events import LocalEventSender
from skulk.models.catalog import ModelCatalog
from skulk.node_channels import NodeChannels
from skulk.node_config import NodeConfig
from skulk.node_readings import NodeMachine
from skulk.node_settings import worker_settings
from skulk.node_side_channels import (
    device_links,
    node_weights,
    revoked_members,
    runners_follow_revocations,
)
from skulk.node_weights import NodeWeights
from skulk.routing.router import Router
from skulk.routing.transport import Transport
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.drafting import DRAFT_SERVICE
from skulk.trust.setup import NodeTrust
from skulk.worker.draft_service import DraftService
from skulk.worker.gpus import refresh_gpus_forever
from skulk.worker.local_runner import SupervisorFactory
from skulk.worker.remote_drafting import remote_drafting_options
from skulk.worker.wiring import WorkerOutbox, WorkerReach
from skulk.worker.worker import Worker


async def start_worker(tasks: TaskGroup, *, config: NodeConfig, machine: NodeMachine,
                       trust: NodeTrust, transport: Transport, router: Router,
                       channels: NodeChannels, local_events: LocalEventSender,
                       replica: StateReplica, telemetry: TelemetryView,
                       catalog: ModelCatalog, data_plane: DataPlaneReceiver,
                       supervisor_factory: SupervisorFactory
                       ) -> tuple[Worker, NodeWeights]:
    node_id, data_dir = machine.node_id, config.data_dir
    revoked = revoked_members(data_dir, lambda: replica.state.revoked_nodes)
    weights = node_weights(node_id, data_dir, config.listen, trust.tls, revoked, telemetry.live)
    await tasks.start(weights.serve)
    links = device_links(data_dir, config.listen, trust.tls, revoked)
    tasks.start_soon(runners_follow_revocations, replica, links)
    chunks = ChunkSender(node_id=node_id, receiver=data_plane, replica=replica,
                         remote=channels.chunks)
    worker = Worker(
        node_id=node_id, replica=replica, catalog=catalog,
        outbox=WorkerOutbox(events=local_events, chunks=chunks, commands=channels.commands,
                            spans=channels.spans, chunks_now=chunks),
        settings=worker_settings(config),
        reach=WorkerReach(
            memory=machine, weight_sources=weights.sources_for,
            device_links=links,
            remote_drafting=partial(remote_drafting_options, transport, router,
                                    data_dir=data_dir if trust.secure else None)),
        supervisor_factory=supervisor_factory)
    tasks.start_soon(worker.run)
    if machine.gpus:  # their free memory changes as runners load
        tasks.start_soon(refresh_gpus_forever, machine.keep_gpus)
    # Any worker node drafts for other nodes' runners (prompt lookup).
    router.answer(DRAFT_SERVICE, DraftService().handle)
    return worker, weights
