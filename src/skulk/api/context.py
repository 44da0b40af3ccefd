"""What the API needs from its node: identity, cards, the State replica, streams, commands.

Routers take it as the `Context` dependency; the app holds the one the node built.
"""

import time
from collections.abc import Awaitable, Callable, Set
from dataclasses import dataclass, field
from typing import Annotated

import anyio
from fastapi import Depends, Request

from skulk.api.conversations import ConversationStore
from skulk.api.log_buffer import LogBuffer
from skulk.api.metrics import ApiMetrics
from skulk.api.streams import StreamRegistry
from skulk.api.tracing import TraceStore
from skulk.models.catalog import ModelCatalog
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import Command
from skulk.shared.types.ids import CommandId, ModelId, NodeId
from skulk.versions import Versions, versions


async def _nobody_answers(node_id: NodeId, path: bytes, timeout: float) -> bytes | None:
    return None


@dataclass
class ApiContext:
    """Handed to every API router; the node builds it, tests build it with fakes."""

    node_id: NodeId
    catalog: ModelCatalog
    replica: StateReplica
    telemetry: TelemetryView
    streams: StreamRegistry
    send_command: Callable[[Command], Awaitable[None]]
    # The node's Ed25519 public key, hex; empty in tests that build no identity.
    public_key: str = ""
    # Whether the cluster plane is TLS with member certificates (False: `--insecure`).
    secure: bool = True
    quorum: str = "available"
    # A request for a model with no instance places one when it fits.
    auto_place: bool = True
    # How long a request waits for an instance to become ready (placement + load).
    ready_timeout_seconds: float = 300.0
    # Admission: most requests queued per instance (`--max-queue`; None: 16 per slot of
    # its batch), and how long one may wait queued before it is refused (503).
    max_queue: int | None = None
    queue_timeout_seconds: float = 300.0
    # `--max-tokens`: the most tokens one request generates (None: up to the context).
    max_tokens: int | None = None
    # The cluster as this node sees it: live members and the elected master.
    live_nodes: Callable[[], Set[NodeId]] = lambda: frozenset()
    master_node: Callable[[], NodeId | None] = lambda: None
    # One placement at a time per model, so concurrent first requests place it once.
    placement_locks: dict[ModelId, anyio.Lock] = field(default_factory=dict)
    # A request that failed over runs under a new command: the id its client was told,
    # mapped to the one now serving (for `POST /v1/cancel/{id}`).
    command_aliases: dict[CommandId, CommandId] = field(default_factory=dict)
    metrics: ApiMetrics = field(default_factory=ApiMetrics)
    conversations: ConversationStore = field(default_factory=ConversationStore)
    traces: TraceStore = field(default_factory=TraceStore)
    # This node's runners, for diagnostics (empty on a node without a worker).
    runners_report: Callable[[], list[dict[str, object]]] = lambda: []
    # Another node's signed answer to a peer read (path bytes in, JSON bytes out).
    ask_peer: Callable[[NodeId, bytes, float], Awaitable[bytes | None]] = _nobody_answers
    started_at: float = field(default_factory=time.monotonic)
    # What this node runs, for `GET /version` (the node adds what its engines report).
    versions: Callable[[], Versions] = versions
    # The node's recent log lines (filled by the sink `skulk run` adds to loguru).
    logs: LogBuffer = field(default_factory=LogBuffer)
    # Asks the node to shut down as on SIGTERM (`POST /v1/node/stop`).
    request_stop: Callable[[], None] = lambda: None


async def api_context(request: Request) -> ApiContext:
    """The context the app was built with (`create_app` keeps it in the app's state)."""
    context: ApiContext = request.app.state.context
    return context


Context = Annotated[ApiContext, Depends(api_context)]
