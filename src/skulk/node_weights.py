"""A worker node's share of the cluster's model store: it serves its verified store to the
other members, and it says where a rank's missing weights come from (the members that
hold them, nearest first, then the hub)."""

from collections.abc import Callable, Mapping, Set
from pathlib import Path

import anyio
from anyio.abc import TaskStatus
from loguru import logger

from skulk.models.peers.holders import peers_holding
from skulk.models.peers.server import WeightServer
from skulk.models.peers.source import PeerSource
from skulk.models.store.layer_files import Layers
from skulk.shared.types.ids import NodeId
from skulk.shared.types.model_cards import ModelCard, ModelFormat
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.trust.files import TlsFiles
from skulk.worker.weight_sources import WeightSource, hub_sources


class NodeWeights:
    def __init__(self, *, node_id: NodeId, models_dir: Path, tls: TlsFiles | None,
                 host: str, revoked: Callable[[], Set[NodeId]],
                 readings: Callable[[], Mapping[NodeId, NodeTelemetry]]) -> None:
        self._node_id = node_id
        self._models_dir = models_dir
        self._tls = tls  # None: an --insecure cluster, plain HTTP
        self._host = host
        self._revoked = revoked
        self._readings = readings
        self.port: int | None = None  # where members fetch from, while serving

    async def serve(self, *, task_status: TaskStatus[None]) -> None:
        """Serve the store to members until cancelled (in threads of the server's own:
        sending weights never runs on the node's event loop)."""
        server = WeightServer(self._models_dir, tls=self._tls, host=self._host,
                              is_revoked=lambda node: node in self._revoked())
        self.port = await anyio.to_thread.run_sync(server.start)
        logger.info("serving stored weights to members on {}:{}", self._host, self.port)
        task_status.started()
        try:
            await anyio.sleep_forever()
        finally:
            self.port = None
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(server.stop)

    def sources_for(self, card: ModelCard, format: ModelFormat,
                    layers: Layers | None = None) -> list[WeightSource]:
        """Where a rank's missing weights come from, in the order to try them: the members
        holding them (for a pipeline stage's `layers`, a copy covering them will do),
        nearest first, then the hub repository the card names (weights cross the
        internet once per cluster)."""
        holders = peers_holding(self._readings(), card.model_id, format, self._node_id,
                                secure=self._tls is not None, layers=layers)
        peers: list[WeightSource] = [PeerSource(holding, self._tls, layers)
                                     for holding in holders]
        return peers + hub_sources(card, format, layers)
