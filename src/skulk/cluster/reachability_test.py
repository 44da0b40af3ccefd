import ipaddress
import socket
from collections.abc import Iterator

import pytest

from skulk.cluster.reachability import (
    ReachabilityProber,
    advertised_addresses,
    connect_rtt_ms,
    listen_ports,
    local_interfaces,
    ports_of_endpoints,
)
from skulk.routing.zenoh_transport import ZenohTransport
from skulk.shared.topology import Interface
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry, Reachability
from skulk.shared.types.wire import from_msgpack, to_msgpack
from skulk.worker.telemetry import read_telemetry

pytestmark = pytest.mark.anyio
HERE, PEER = NodeId("here"), NodeId("peer")


def loopback_only() -> list[Interface]:
    return [ipaddress.ip_interface("127.0.0.1/8")]


def peer_reading(ports: list[int], addresses: list[str] | None = None) -> NodeTelemetry:
    return NodeTelemetry(
        node_id=PEER, stamp=0.0, memory_total_bytes=1, memory_available_bytes=1, cpu_count=1,
        backends=[], has_worker=False,
        reachability=Reachability(addresses=addresses or ["127.0.0.1"], listen_ports=ports))


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A real TCP listener on loopback; connects complete in its backlog."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        yield sock
    finally:
        sock.close()


async def test_an_edge_appears_while_the_peer_listens_and_goes_when_it_closes(
        listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    peers = {PEER: peer_reading([port])}
    prober = ReachabilityProber(node_id=HERE, peers=lambda: peers,
                                interfaces=loopback_only, connect_timeout=0.5)
    await prober.probe_round()
    [edge] = prober.reachability().peers
    assert edge.node_id == PEER
    assert [a.address for a in edge.addresses] == ["127.0.0.1"]
    assert 0 <= edge.addresses[0].rtt_ms < 500
    listener.close()
    await prober.probe_round()
    assert prober.reachability().peers == []


async def test_a_peer_on_another_host_is_never_probed_on_loopback(
        listener: socket.socket) -> None:
    # The port answers on this machine's loopback, but the peer claims another address:
    # reaching our own loopback would say nothing about the peer.
    peers = {PEER: peer_reading([listener.getsockname()[1]], ["10.255.0.9", "127.0.0.1"])}
    interfaces = [ipaddress.ip_interface("127.0.0.1/8"), ipaddress.ip_interface("10.9.0.1/24")]
    prober = ReachabilityProber(node_id=HERE, peers=lambda: peers,
                                interfaces=lambda: interfaces, connect_timeout=0.2,
                                round_budget=0.5)
    await prober.probe_round()
    assert all(a.address != "127.0.0.1"
               for e in prober.reachability().peers for a in e.addresses)


async def test_an_observation_expires_after_its_ttl_and_a_vanished_peer_is_dropped(
        listener: socket.socket) -> None:
    now = [100.0]
    peers = {PEER: peer_reading([listener.getsockname()[1]])}
    prober = ReachabilityProber(node_id=HERE, peers=lambda: dict(peers),
                                interfaces=loopback_only, edge_ttl=10.0,
                                clock=lambda: now[0])
    await prober.probe_round()
    assert len(prober.reachability().peers) == 1
    now[0] = 111.0
    assert prober.reachability().peers == []
    now[0] = 100.0
    del peers[PEER]
    await prober.probe_round()
    assert prober.reachability().peers == []


async def test_advertised_ports_are_the_transports_bound_ones_then_the_api() -> None:
    class Bound:
        async def listen_endpoints(self) -> list[str]:
            return ["tcp/127.0.0.1:41233", "tcp/[fd00::2]:41233", "udp/10.0.0.1:9"]

    assert await listen_ports(Bound(), 52415) == [41233, 52415]
    assert await listen_ports(object(), None) == []
    assert ports_of_endpoints(["tls/10.0.0.1:7447#iface=eth0", "tcp/x"]) == [7447]


def test_this_hosts_addresses_put_loopback_last_and_survive_the_wire() -> None:
    interfaces = local_interfaces()
    addresses = advertised_addresses(interfaces)
    assert "127.0.0.1" in addresses
    assert all(not ipaddress.ip_address(a).is_link_local for a in addresses)
    outward = [a for a in addresses if not ipaddress.ip_address(a).is_loopback]
    assert addresses[:len(outward)] == outward
    reading = read_telemetry(HERE, has_worker=False, backends=[],
                             reachability=Reachability(addresses=addresses, listen_ports=[1]))
    assert from_msgpack(NodeTelemetry, to_msgpack(reading)) == reading


async def test_a_round_cut_short_keeps_the_older_observation_until_its_ttl(
        listener: socket.socket) -> None:
    # A listener whose accept queue is full drops SYNs: connects to it hang.
    stuck = socket.socket()
    stuck.bind(("127.0.0.1", 0))
    stuck.listen(0)
    filler = socket.create_connection(stuck.getsockname())
    try:
        now = [100.0]
        peers = {PEER: peer_reading([listener.getsockname()[1]])}
        prober = ReachabilityProber(node_id=HERE, peers=lambda: peers,
                                    interfaces=loopback_only, connect_timeout=2.0,
                                    round_budget=0.3, edge_ttl=10.0, clock=lambda: now[0])
        await prober.probe_round()
        peers[PEER] = peer_reading([stuck.getsockname()[1]])
        now[0] = 105.0
        await prober.probe_round()
        [kept] = prober.reachability().peers
        assert kept.observed_at == 100.0
        now[0] = 111.0
        assert prober.reachability().peers == []
    finally:
        filler.close()
        stuck.close()


async def test_a_zenoh_transport_on_port_zero_advertises_the_port_it_really_bound() -> None:
    transport = await ZenohTransport.open(listen=["tcp/127.0.0.1:0"], connect=[])
    try:
        [port] = await listen_ports(transport, None)
        assert port != 0
        assert await connect_rtt_ms("127.0.0.1", port, 1.0) is not None
    finally:
        await transport.close()


async def test_a_round_probes_a_few_peers_in_turn_and_every_peer_within_a_cycle() -> None:
    listener = socket.socket()  # never accepts: its backlog holds every probe of the test
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    port = listener.getsockname()[1]
    peers = {NodeId(f"peer-{i:02d}"): peer_reading([port]).model_copy(
        update={"node_id": NodeId(f"peer-{i:02d}")}) for i in range(20)}
    prober = ReachabilityProber(node_id=HERE, peers=lambda: peers, interfaces=loopback_only,
                                edge_ttl=10.0, peers_per_round=8, clock=lambda: 100.0)
    seen = []
    for _ in range(3):
        await prober.probe_round()
        seen.append({edge.node_id for edge in prober.reachability().peers})
    assert [len(edges) for edges in seen] == [8, 16, 20]
    # Each edge lives a whole cycle of turns (three rounds of 8 for 20 peers) times its TTL.
    assert {edge.ttl_seconds for edge in prober.reachability().peers} == {30.0}
    await prober.probe_round()  # the fourth round probes the first round's peers again
    assert len(prober.reachability().peers) == 20
    listener.close()
