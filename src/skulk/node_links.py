"""What a node's readings say about its place in the cluster: where it listens (cluster
endpoints, API URL), whether it sees the cluster it belongs to, and, in its last reading,
that it leaves on purpose."""

import time

from skulk.api.advertised_url import advertised_api_url
from skulk.cluster.isolation import IsolationWatch
from skulk.cluster.membership import Membership
from skulk.cluster.node_endpoints import bound_cluster_endpoints, node_endpoints
from skulk.cluster.reachability import ReachabilityProber
from skulk.node_config import NodeConfig
from skulk.shared.channels import Sender
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.trust.setup import NodeTrust


class NodeLinks:
    """Learns the transport's bound endpoints and watches for isolation; `stamp` adds
    them, and the API URL peers can use, to each of the node's readings."""

    def __init__(self, *, node_id: NodeId, config: NodeConfig, trust: NodeTrust,
                 members: Membership, replica: StateReplica, telemetry: TelemetryView,
                 prober: ReachabilityProber, readings: Sender[NodeTelemetry]) -> None:
        self._node_id = node_id
        self._config = config
        self._telemetry = telemetry
        self._prober = prober
        self._readings = readings
        self._cluster_endpoints: list[str] = []
        # A member certificate without the authority's key: another node made the cluster.
        joined = trust.secure and trust.admitter is None
        self.isolation = IsolationWatch(node_id=node_id, peers=config.peers, joined=joined,
                                        live=lambda: members.live,
                                        agreed=lambda: replica.state.members,
                                        readings=telemetry.live)

    async def run(self, transport: object) -> None:
        self._cluster_endpoints = await bound_cluster_endpoints(transport)
        await self.isolation.run()

    @property
    def cluster_endpoints(self) -> list[str]:
        return list(self._cluster_endpoints)

    def api_url(self) -> str | None:
        """The API URL peers can reach, or None (no API, or one on loopback only)."""
        config = self._config
        if not config.run_api:
            return None
        return advertised_api_url(config.api_host, config.api_port,
                                  self._prober.reachability().addresses)

    def stamp(self, reading: NodeTelemetry) -> NodeTelemetry:
        config = self._config
        advertised = self.api_url()
        endpoints = node_endpoints(self._cluster_endpoints, config.api_host, config.api_port,
                                   advertised, config.run_api)
        return reading.model_copy(update={"api_url": advertised, "endpoints": endpoints,
                                          "links": self.isolation.links()})

    async def say_stopping(self) -> None:
        """Send the node's latest reading once more, marked `stopping` (before the
        transport closes): the others then show it stopped on purpose, not lost."""
        own = self._telemetry.live().get(self._node_id)
        if own is not None:
            await self._readings.send(own.model_copy(update={"stopping": True,
                                                             "stamp": time.time()}))
