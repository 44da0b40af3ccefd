"""The cluster's history as one node serves it: its own rings, and each peer's samples
kept here as they were read. A refresh asks each live peer only for what is newer than
what this node already holds of it, so a dashboard polling every few seconds moves a few
samples per node, not an hour of them (the first read of a peer moves its hour: about
250 KB of JSON columns, `wire.py`)."""

import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import anyio

from skulk.api.history.recorder import MetricsHistory
from skulk.api.history.samples import (
    RING_CAPACITY,
    WINDOW_SECONDS,
    InstanceSample,
    Marker,
    NodeSample,
)
from skulk.api.history.wire import read_samples
from skulk.shared.types.ids import NodeId

NODE_PATH = "/v1/history/node"


# One peer's JSON answer to a path, or why there is none (`api.peers.ask_peer`).
AskPeer = Callable[[NodeId, str], Awaitable[tuple[object, None] | tuple[None, str]]]


@dataclass
class PeerHistory:
    """One peer's samples as this node last read them."""

    nodes: deque[NodeSample] = field(default_factory=lambda: deque(maxlen=RING_CAPACITY))
    instances: deque[InstanceSample] = field(default_factory=deque)

    def newest(self) -> float:
        return self.nodes[-1].at if self.nodes else 0.0

    def take(self, answer: object) -> None:
        """Add what a peer's answer holds beyond this copy's newest sample; raises
        `ValueError` when it is not an answer (and adds nothing)."""
        nodes, instances = read_samples(answer)
        newest = self.newest()
        self.nodes.extend(s for s in nodes if s.at > newest)
        self.instances.extend(s for s in instances if s.at > newest)

    def forget_before(self, cutoff: float) -> None:
        while self.nodes and self.nodes[0].at < cutoff:
            self.nodes.popleft()
        while self.instances and self.instances[0].at < cutoff:
            self.instances.popleft()


@dataclass
class ClusterHistory:
    """This node's history and the copies of its peers'."""

    own: MetricsHistory = field(default_factory=MetricsHistory)
    peers: dict[NodeId, PeerHistory] = field(default_factory=dict)
    clock: Callable[[], float] = time.time
    _refreshing: anyio.Lock = field(default_factory=anyio.Lock)

    async def refresh(self, live_peers: Iterable[NodeId], ask: AskPeer) -> dict[NodeId, str]:
        """Read from each live peer what it sampled after its newest sample held here (so
        a peer that lags or is silent costs only its own answer); returns why some did
        not answer. Peers that left keep their samples until they age out."""
        errors: dict[NodeId, str] = {}

        async def read(node_id: NodeId) -> None:
            history = self.peers.get(node_id) or PeerHistory()
            answer, why_not = await ask(node_id, f"{NODE_PATH}?since={history.newest()}")
            if why_not is not None:
                errors[node_id] = why_not
                return
            try:
                history.take(answer)
            except ValueError as error:
                errors[node_id] = f"malformed history: {error}"[:300]
                return
            self.peers[node_id] = history

        async with self._refreshing:
            async with anyio.create_task_group() as tasks:
                for node_id in sorted(set(live_peers)):
                    tasks.start_soon(read, node_id)
            cutoff = self.clock() - WINDOW_SECONDS
            for node_id, history in list(self.peers.items()):
                history.forget_before(cutoff)
                if not history.nodes:
                    del self.peers[node_id]
            return errors

    def node_samples(self, own_id: NodeId) -> dict[NodeId, list[NodeSample]]:
        samples = {node_id: list(h.nodes) for node_id, h in self.peers.items()}
        samples[own_id] = list(self.own.nodes)
        return dict(sorted(samples.items()))

    def instance_samples(self) -> list[InstanceSample]:
        own = [s for ring in self.own.instances.values() for s in ring]
        return own + [s for h in self.peers.values() for s in h.instances]

    def markers(self) -> list[Marker]:
        """Markers from this node's own replica: the event log is the same on every node,
        so peers' would only repeat them (a node started late lacks the earlier ones)."""
        cutoff = self.clock() - WINDOW_SECONDS
        return [m for m in self.own.markers if m.at >= cutoff]

