"""The cluster graph from observed reachability, and which address to use between nodes.

Pure functions of the telemetry map. An edge A → B exists while A's newest probe round
reached B at some address and that observation is younger than its TTL; it says nothing
about B → A (a firewall or NAT can make reachability one-way).
"""

import ipaddress
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import (
    NodeTelemetry,
    PeerReachability,
    Reachability,
    ReachableAddress,
)

Interface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


class TopologyNode(WireModel):
    """A node as its peers can probe it."""

    node_id: NodeId = Field(description="The node.")
    addresses: list[str] = Field(description="IP addresses the node advertises.")
    listen_ports: list[int] = Field(description="TCP ports it listens on, as bound.")


class TopologyEdge(WireModel):
    """`from_node` reached `to_node` at these addresses in its latest probe round."""

    from_node: NodeId = Field(description="The node that probed.")
    to_node: NodeId = Field(description="The node that answered.")
    addresses: list[ReachableAddress] = Field(
        description="Addresses of `to_node` that answered, best first, with connect RTTs.")
    observed_at: float = Field(description="Unix time of the probe round.")


class Topology(WireModel):
    """Nodes with live telemetry and the directed edges between them still in their TTL."""

    nodes: list[TopologyNode] = Field(description="Nodes, sorted by id.")
    edges: list[TopologyEdge] = Field(description="Directed edges, sorted by (from, to).")


@dataclass(frozen=True)
class MissingEdges:
    """Some ring neighbour has no observed way to reach the next rank's node.

    `pairs` holds (connecting node, listening node) for every hop that lacks an edge; a
    placement must not build a ring over these nodes.
    """

    pairs: tuple[tuple[NodeId, NodeId], ...]

    @property
    def per_node(self) -> dict[NodeId, str]:
        """Why each listening node cannot join the ring, keyed like placement errors."""
        return {to: f"{source} has no observed IPv4 route to it" for source, to in self.pairs}

    def describe(self) -> str:
        hops = ", ".join(f"{source} -> {to}" for source, to in self.pairs)
        return f"no observed reachability for ring hops: {hops}"


def is_loopback(address: str) -> bool:
    return ipaddress.ip_address(address).is_loopback


def same_host(own_addresses: Sequence[str], peer_addresses: Sequence[str]) -> bool:
    """Two nodes share a host when they share a non-loopback address, or when the peer
    advertises nothing but loopback (then loopback is the only way there is to try)."""
    peer_outside = {a for a in peer_addresses if not is_loopback(a)}
    if not peer_outside:
        return bool(peer_addresses)
    return bool(peer_outside & {a for a in own_addresses if not is_loopback(a)})


def probe_targets(own_addresses: Sequence[str], peer: Reachability) -> list[tuple[str, int]]:
    """Every (address, port) of a peer worth a connect attempt.

    Loopback is skipped for a peer on another host: the connect would reach this machine's
    own port, and answer for the wrong node.
    """
    local = same_host(own_addresses, peer.addresses)
    return [(address, port) for address in peer.addresses
            if local or not is_loopback(address) for port in peer.listen_ports]


def rank_addresses(answered: Mapping[str, float], own_interfaces: Sequence[Interface]
                   ) -> list[ReachableAddress]:
    """Answered addresses (address → RTT in ms), best first.

    Same subnet as one of ours first, then lower RTT in whole milliseconds (so jitter
    below a millisecond does not reorder them every round), then loopback, then address.
    """
    networks = [interface.network for interface in own_interfaces]

    def key(item: tuple[str, float]) -> tuple[bool, int, bool, str]:
        address = ipaddress.ip_address(item[0])
        subnet = any(address.version == n.version and address in n for n in networks)
        return (not subnet, int(item[1]), not address.is_loopback, item[0])

    return [ReachableAddress(address=a, rtt_ms=rtt) for a, rtt in sorted(answered.items(),
                                                                         key=key)]


def _now(now: float | None) -> float:
    return time.time() if now is None else now


def current_edge(from_node: NodeId, to_node: NodeId,
                 telemetry: Mapping[NodeId, NodeTelemetry], *, now: float | None = None
                 ) -> PeerReachability | None:
    """`from_node`'s observation of `to_node`, if both have telemetry and it is in its TTL.

    Addresses `to_node` no longer advertises (a changed lease, a downed interface) are
    dropped, so a stale address is never handed out.
    """
    source, target = telemetry.get(from_node), telemetry.get(to_node)
    if source is None or target is None or from_node == to_node:
        return None
    moment = _now(now)
    advertised = set(target.reachability.addresses)
    for seen in source.reachability.peers:
        if seen.node_id != to_node or moment - seen.observed_at > seen.ttl_seconds:
            continue
        addresses = [a for a in seen.addresses if a.address in advertised]
        return seen.model_copy(update={"addresses": addresses}) if addresses else None
    return None


def address_between(from_node: NodeId, to_node: NodeId,
                    telemetry: Mapping[NodeId, NodeTelemetry], *, now: float | None = None
                    ) -> str | None:
    """The address `from_node` should use to reach `to_node`: the best one it observed
    answering; None when there is no such observation (or it has expired)."""
    edge = current_edge(from_node, to_node, telemetry, now=now)
    return None if edge is None else edge.addresses[0].address


def ring_hosts(ranks: Sequence[NodeId], telemetry: Mapping[NodeId, NodeTelemetry], *,
               now: float | None = None) -> list[str] | MissingEdges:
    """The IP each rank of an MLX ring listens on, from what its ring neighbour observed.

    In the ring, rank i accepts on its own entry and rank i-1 connects to it; rank 0 is
    reached from the last rank (for two ranks, that is rank 1). So rank i's entry is the
    best IPv4 address (the ring connects over AF_INET sockets) that rank i-1's node
    observed answering on rank i's node. Two ranks on one node use loopback.
    """
    if len(ranks) == 1:
        return ["127.0.0.1"]
    hosts: list[str] = []
    missing: list[tuple[NodeId, NodeId]] = []
    for rank, node in enumerate(ranks):
        source = ranks[rank - 1]
        if source == node:
            hosts.append("127.0.0.1")
            continue
        edge = current_edge(source, node, telemetry, now=now)
        ipv4 = [a.address for a in edge.addresses
                if ipaddress.ip_address(a.address).version == 4] if edge else []
        if ipv4:
            hosts.append(ipv4[0])
        else:
            missing.append((source, node))
    return MissingEdges(tuple(missing)) if missing else hosts


def topology(telemetry: Mapping[NodeId, NodeTelemetry], *, now: float | None = None
             ) -> Topology:
    """The graph over every node in `telemetry`, with only the edges still valid."""
    moment = _now(now)
    nodes = [TopologyNode(node_id=n, addresses=r.reachability.addresses,
                          listen_ports=r.reachability.listen_ports)
             for n, r in sorted(telemetry.items())]
    edges = []
    for source in sorted(telemetry):
        # Only the peers it observed can have an edge from it: N x its edges, not N x N.
        observed = {seen.node_id for seen in telemetry[source].reachability.peers}
        for target in sorted(observed):
            edge = current_edge(source, target, telemetry, now=moment)
            if edge is not None:
                edges.append(TopologyEdge(from_node=source, to_node=target,
                                          addresses=edge.addresses,
                                          observed_at=edge.observed_at))
    return Topology(nodes=nodes, edges=edges)
