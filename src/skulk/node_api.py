"""The node's HTTP API: the contexts its routers read, the loops that keep its history
(the counters its metrics scrape are in `node_metrics`), and the answers it gives other
nodes' peer reads."""

import asyncio
from dataclasses import dataclass
from functools import partial

import anyio

from skulk.api.app import create_app
from skulk.api.context import (
    ApiContext,
    ApiSettings,
    ClusterView,
    NodeOperations,
    RequestBook,
)
from skulk.api.history.sampler import mark_forever, sample_forever
from skulk.api.log_buffer import LogBuffer
from skulk.api.peer_reads import PEER_READ_SERVICE, peer_read_handler
from skulk.api.routers.diagnostics import node_diagnostics
from skulk.api.server import serve_api
from skulk.api.streams import StreamRegistry
from skulk.api.tracing import TraceStore
from skulk.cluster.election import Election
from skulk.cluster.master_seat import MasterSeat
from skulk.cluster.membership import Membership
from skulk.models.catalog import ModelCatalog
from skulk.node_config import NodeConfig
from skulk.node_metrics import certificate_expiry, node_counters, node_gauges
from skulk.routing.dropped import DroppedMessages
from skulk.routing.router import Router
from skulk.shared.channels import Sender
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import Command
from skulk.shared.types.ids import NodeId
from skulk.versions import versions
from skulk.worker.engines.registry import native_versions
from skulk.worker.worker import Worker


@dataclass(frozen=True)
class NodeParts:
    """The parts of a running node the API reads (read-only) or sends through."""

    node_id: NodeId
    public_key: str
    secure: bool
    catalog: ModelCatalog
    replica: StateReplica
    telemetry: TelemetryView
    streams: StreamRegistry
    traces: TraceStore
    members: Membership
    election: Election
    seat: MasterSeat
    worker: Worker | None
    dropped: DroppedMessages
    logs: LogBuffer
    # Commands from API users, through the quorum gate.
    commands: Sender[Command]
    stop_requested: anyio.Event


def api_settings(config: NodeConfig) -> ApiSettings:
    return ApiSettings(quorum=config.quorum, auto_place=config.auto_place,
                       max_queue=config.max_queue, max_tokens=config.max_tokens,
                       queue_timeout_seconds=config.queue_timeout_seconds)


def api_context(parts: NodeParts, config: NodeConfig, router: Router) -> ApiContext:
    worker = parts.worker
    return ApiContext(
        cluster=ClusterView(node_id=parts.node_id, catalog=parts.catalog,
                            replica=parts.replica, telemetry=parts.telemetry,
                            members=parts.members, election=parts.election,
                            public_key=parts.public_key, secure=parts.secure),
        requests=RequestBook(streams=parts.streams, commands=parts.commands,
                             traces=parts.traces,
                             direct=worker.direct_streams if worker is not None else None),
        settings=api_settings(config),
        operations=NodeOperations(
            logs=parts.logs,
            runners_report=worker.runners_report if worker is not None else lambda: [],
            ask_peer=partial(router.ask, PEER_READ_SERVICE),
            versions=lambda: versions(native_versions()),
            request_stop=parts.stop_requested.set))


async def serve_node_api(parts: NodeParts, config: NodeConfig, router: Router) -> None:
    """Serve the API until cancelled, keep the node's history, and answer other nodes'
    peer reads."""
    context = api_context(parts, config, router)
    replica, operations = parts.replica, context.operations
    certificates = certificate_expiry(config.data_dir, parts.secure)
    operations.metrics.watch_node(
        partial(node_counters, parts, max_queue=config.max_queue, certificates=certificates),
        lambda: replica.state)
    router.answer_signed(PEER_READ_SERVICE, peer_read_handler(
        context, asyncio.get_running_loop(), node_diagnostics))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(partial(sample_forever, operations.history.own, operations.metrics,
                                 partial(node_gauges, parts)))
        tasks.start_soon(mark_forever, operations.history.own, replica)
        await serve_api(create_app(context, config.security), config.api_host,
                        config.api_port)
        tasks.cancel_scope.cancel()
