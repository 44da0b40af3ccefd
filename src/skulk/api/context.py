"""What the API needs from its node, by concern: the cluster as this node sees it
(read-only), the requests it took and the way to the master, the operator's settings, and
the node's own operations (metrics, logs, versions, diagnostics, stopping).

The app holds one `ApiContext` (the node builds it, tests build it with fakes). A router
that needs one concern takes only that one (`Cluster`, `Operations`); a router that opens
generations takes the whole `Context`.
"""

import time
from collections.abc import Awaitable, Callable, Set
from dataclasses import dataclass, field
from typing import Annotated

import anyio
from fastapi import Depends, Request

from skulk.api.conversations import ConversationStore
from skulk.api.history.cluster import ClusterHistory
from skulk.api.log_buffer import LogBuffer
from skulk.api.metrics import ApiMetrics
from skulk.api.streams import StreamRegistry
from skulk.api.tracing import TraceStore
from skulk.models.catalog import ModelCatalog
from skulk.shared.channels import Sender
from skulk.shared.partition import Quorum
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import Command
from skulk.shared.types.ids import CommandId, ModelId, NodeId
from skulk.shared.views import ElectedMaster, LiveMembers
from skulk.versions import Versions, versions
from skulk.worker.runner.direct_streams import DirectStreams


@dataclass
class ClusterView:
    """The cluster as this node sees it, read-only: who it is, the replicated State, the
    catalogue, members' readings, live members and the elected master."""

    node_id: NodeId
    catalog: ModelCatalog
    replica: StateReplica
    telemetry: TelemetryView
    # None: no membership to read (tests); `live_nodes()` is then empty.
    members: LiveMembers | None = None
    election: ElectedMaster | None = None
    # The node's Ed25519 public key, hex; empty in tests that build no identity.
    public_key: str = ""
    # Whether the cluster plane is TLS with member certificates (False: `--insecure`).
    secure: bool = True

    def live_nodes(self) -> Set[NodeId]:
        return frozenset() if self.members is None else self.members.live

    def master_node(self) -> NodeId | None:
        return None if self.election is None else self.election.master


@dataclass
class RequestBook:
    """The requests this node took: their streams and traces, the conversations it keeps,
    and the way its commands go to the master."""

    streams: StreamRegistry
    commands: Sender[Command]
    traces: TraceStore = field(default_factory=TraceStore)
    conversations: ConversationStore = field(default_factory=ConversationStore)
    # One placement at a time per model, so concurrent first requests place it once.
    placement_locks: dict[ModelId, anyio.Lock] = field(default_factory=dict)
    # A request that failed over runs under a new command: the id its client was told,
    # mapped to the one now serving (for `POST /v1/cancel/{id}`).
    command_aliases: dict[CommandId, CommandId] = field(default_factory=dict)
    # Streams whose plain tokens this node's runners' native relays may write (the
    # worker's; None: no worker, or `--no-native-stream`).
    direct: DirectStreams | None = None


@dataclass(frozen=True)
class ApiSettings:
    """The operator's choices for requests (`skulk run`'s flags)."""

    quorum: Quorum = "available"
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


async def _nobody_answers(node_id: NodeId, path: bytes, timeout: float) -> bytes | None:
    return None


@dataclass
class NodeOperations:
    """The node's own running: metrics, recent logs, versions, diagnostics of its
    runners, peer reads of other nodes, and stopping."""

    metrics: ApiMetrics = field(default_factory=ApiMetrics)
    # The node's recent log lines (filled by the sink `skulk run` adds to loguru).
    logs: LogBuffer = field(default_factory=LogBuffer)
    # This node's runners, for diagnostics (empty on a node without a worker).
    runners_report: Callable[[], list[dict[str, object]]] = lambda: []
    # Another node's signed answer to a peer read (path bytes in, JSON bytes out).
    ask_peer: Callable[[NodeId, bytes, float], Awaitable[bytes | None]] = _nobody_answers
    # What this node runs, for `GET /version` (the node adds what its engines report).
    versions: Callable[[], Versions] = versions
    # Asks the node to shut down as on SIGTERM (`POST /v1/node/stop`).
    request_stop: Callable[[], None] = lambda: None
    # The last hour of this node's samples and markers, and copies of its peers'.
    history: ClusterHistory = field(default_factory=ClusterHistory)
    started_at: float = field(default_factory=time.monotonic)


@dataclass
class ApiContext:
    """Everything the app's routers may read, one object per concern."""

    cluster: ClusterView
    requests: RequestBook
    settings: ApiSettings = ApiSettings()
    operations: NodeOperations = field(default_factory=NodeOperations)


async def api_context(request: Request) -> ApiContext:
    """The context the app was built with (`create_app` keeps it in the app's state)."""
    context: ApiContext = request.app.state.context
    return context


async def cluster_view(request: Request) -> ClusterView:
    context: ApiContext = request.app.state.context
    return context.cluster


async def node_operations(request: Request) -> NodeOperations:
    context: ApiContext = request.app.state.context
    return context.operations


Context = Annotated[ApiContext, Depends(api_context)]
Cluster = Annotated[ClusterView, Depends(cluster_view)]
Operations = Annotated[NodeOperations, Depends(node_operations)]
