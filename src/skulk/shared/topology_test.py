import ipaddress

from skulk.shared.topology import (
    MissingEdges,
    address_between,
    probe_targets,
    rank_addresses,
    ring_hosts,
    same_host,
    topology,
)
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import (
    NodeTelemetry,
    PeerReachability,
    Reachability,
    ReachableAddress,
)

NOW = 1_000.0
A, B, C = NodeId("a"), NodeId("b"), NodeId("c")


def seen(node: NodeId, *addresses: str, at: float = NOW, ttl: float = 15.0
         ) -> PeerReachability:
    return PeerReachability(
        node_id=node, observed_at=at, ttl_seconds=ttl,
        addresses=[ReachableAddress(address=a, rtt_ms=0.2 + i) for i, a in enumerate(addresses)])


def reading(node: NodeId, addresses: list[str], *peers: PeerReachability) -> NodeTelemetry:
    return NodeTelemetry(
        node_id=node, stamp=NOW, memory_total_bytes=8 << 30, memory_available_bytes=4 << 30,
        cpu_count=2, backends=[], has_worker=True,
        reachability=Reachability(addresses=addresses, listen_ports=[7447], peers=list(peers)))


def telemetry(*readings: NodeTelemetry) -> dict[NodeId, NodeTelemetry]:
    return {r.node_id: r for r in readings}


def test_same_host_means_a_shared_address_or_a_loopback_only_peer() -> None:
    assert same_host(["10.0.0.1", "127.0.0.1"], ["10.0.0.1", "127.0.0.1"])
    assert same_host(["10.0.0.1", "127.0.0.1"], ["127.0.0.1"])
    assert not same_host(["10.0.0.1", "127.0.0.1"], ["10.0.0.2", "127.0.0.1"])


def test_loopback_is_probed_only_on_the_same_host() -> None:
    peer = Reachability(addresses=["10.0.0.2", "127.0.0.1"], listen_ports=[7447, 52415])
    assert probe_targets(["10.0.0.1", "127.0.0.1"], peer) == [
        ("10.0.0.2", 7447), ("10.0.0.2", 52415)]
    local = Reachability(addresses=["10.0.0.1", "127.0.0.1"], listen_ports=[7447])
    assert probe_targets(["10.0.0.1", "127.0.0.1"], local) == [
        ("10.0.0.1", 7447), ("127.0.0.1", 7447)]


def test_same_host_edge_uses_loopback_when_it_ranks_first() -> None:
    own = [ipaddress.ip_interface("127.0.0.1/8"), ipaddress.ip_interface("10.0.0.1/24")]
    ranked = rank_addresses({"10.0.0.1": 0.31, "127.0.0.1": 0.35}, own)
    assert [r.address for r in ranked] == ["127.0.0.1", "10.0.0.1"]
    view = telemetry(
        reading(A, ["10.0.0.1", "127.0.0.1"], PeerReachability(
            node_id=B, addresses=ranked, observed_at=NOW, ttl_seconds=15.0)),
        reading(B, ["10.0.0.1", "127.0.0.1"]))
    assert address_between(A, B, view, now=NOW) == "127.0.0.1"


def test_two_subnets_prefer_the_shared_subnet_over_a_faster_routed_address() -> None:
    own = [ipaddress.ip_interface("10.0.0.1/24"), ipaddress.ip_interface("10.1.0.1/24")]
    ranked = rank_addresses({"172.16.0.2": 0.5, "10.1.0.2": 3.0}, own)
    assert [r.address for r in ranked] == ["10.1.0.2", "172.16.0.2"]
    assert ranked[0].rtt_ms == 3.0


def test_lower_rtt_wins_within_one_subnet() -> None:
    own = [ipaddress.ip_interface("10.0.0.1/16")]
    ranked = rank_addresses({"10.0.1.2": 4.2, "10.0.2.2": 1.1}, own)
    assert [r.address for r in ranked] == ["10.0.2.2", "10.0.1.2"]


def test_reachability_is_one_way_when_only_one_side_observed_it() -> None:
    view = telemetry(reading(A, ["10.0.0.1"], seen(B, "10.0.0.2")),
                     reading(B, ["10.0.0.2"]))
    assert address_between(A, B, view, now=NOW) == "10.0.0.2"
    assert address_between(B, A, view, now=NOW) is None
    graph = topology(view, now=NOW)
    assert [(e.from_node, e.to_node) for e in graph.edges] == [(A, B)]
    assert [n.node_id for n in graph.nodes] == [A, B]


def test_an_expired_observation_is_no_edge() -> None:
    view = telemetry(reading(A, ["10.0.0.1"], seen(B, "10.0.0.2", at=NOW - 16, ttl=15)),
                     reading(B, ["10.0.0.2"]))
    assert address_between(A, B, view, now=NOW) is None
    assert address_between(A, B, view, now=NOW - 2) == "10.0.0.2"
    assert topology(view, now=NOW).edges == []


def test_an_address_the_peer_stopped_advertising_is_not_handed_out() -> None:
    view = telemetry(reading(A, ["10.0.0.1"], seen(B, "10.0.0.9", "10.0.0.2")),
                     reading(B, ["10.0.0.2"]))
    assert address_between(A, B, view, now=NOW) == "10.0.0.2"
    gone = telemetry(reading(A, ["10.0.0.1"], seen(B, "10.0.0.2")))
    assert address_between(A, B, gone, now=NOW) is None


def full_mesh() -> dict[NodeId, NodeTelemetry]:
    return telemetry(
        reading(A, ["10.0.0.1"], seen(B, "10.0.0.2"), seen(C, "10.0.0.3")),
        reading(B, ["10.0.0.2"], seen(A, "10.0.0.1"), seen(C, "10.0.1.3", "10.0.0.3")),
        reading(C, ["10.0.0.3", "10.0.1.3"], seen(A, "10.0.0.1"), seen(B, "10.0.0.2")))


def test_ring_hosts_come_from_each_ranks_predecessor() -> None:
    view = full_mesh()
    # C (rank 2) is listed as b saw it; rank 0 is reached from the last rank.
    assert ring_hosts([A, B, C], view, now=NOW) == ["10.0.0.1", "10.0.0.2", "10.0.1.3"]
    assert ring_hosts([C, A], view, now=NOW) == ["10.0.0.3", "10.0.0.1"]


def test_a_ring_over_a_missing_edge_is_a_typed_error_naming_every_hop() -> None:
    view = telemetry(reading(A, ["10.0.0.1"], seen(B, "10.0.0.2")),
                     reading(B, ["10.0.0.2"]),
                     reading(C, ["10.0.0.3"], seen(A, "10.0.0.1")))
    result = ring_hosts([A, B, C], view, now=NOW)
    assert isinstance(result, MissingEdges)
    assert result.pairs == ((B, C),)
    assert C in result.per_node and "b -> c" in result.describe()
    assert isinstance(ring_hosts([A, B], view, now=NOW), MissingEdges)


def test_ring_hosts_use_ipv4_only_and_loopback_for_ranks_sharing_a_node() -> None:
    view = telemetry(reading(A, ["10.0.0.1", "fd00::1"], seen(B, "fd00::2")),
                     reading(B, ["fd00::2"], seen(A, "fd00::1", "10.0.0.1")))
    result = ring_hosts([A, B], view, now=NOW)
    assert result == MissingEdges(((A, B),))
    assert ring_hosts([A], view, now=NOW) == ["127.0.0.1"]
    assert ring_hosts([A, A], view, now=NOW) == ["127.0.0.1", "127.0.0.1"]
