"""Observed reachability: this node's addresses and ports, and probes of its peers'.

Every few seconds the prober tries a short TCP connect to each (address, port) some live
peers advertise and keeps, per peer, the addresses that answered. A round probes at most
`PEERS_PER_ROUND` peers, taken in turn, so its work stays the same however large the
cluster is, and every peer is probed again within ceil(peers / PEERS_PER_ROUND) rounds;
an edge lives that many times its TTL. What it found rides this node's telemetry;
`skulk.shared.topology` turns everyone's findings into the graph.
"""

import ipaddress
import math
import random
import socket
import time
from collections.abc import Callable, Mapping, Sequence

import anyio
import psutil

from skulk.routing.transport import ListensOnEndpoints
from skulk.shared.reading_changes import FULL_REFRESH_SECONDS
from skulk.shared.topology import Interface, probe_targets, rank_addresses
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry, PeerReachability, Reachability

PROBE_INTERVAL_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 1.0
# A round stops after this long even with connects pending, so a peer with many dead
# addresses cannot stretch it past the interval.
ROUND_BUDGET_SECONDS = 3.0
MAX_CONCURRENT_PROBES = 16
PEERS_PER_ROUND = 8
# Three missed rounds (one lost round, a busy loop or a GC pause, does not drop an edge),
# plus the time an unchanged reading waits before it is sent again.
EDGE_TTL_SECONDS = 3 * PROBE_INTERVAL_SECONDS + FULL_REFRESH_SECONDS
LOOPBACK = (ipaddress.ip_interface("127.0.0.1/8"), ipaddress.ip_interface("::1/128"))


def local_interfaces() -> list[Interface]:
    """This host's IP interfaces with their netmasks, loopback included.

    IPv6 link-local addresses are left out: their zone (`%eth0`) only means something on
    this host, so a peer could not use them.
    """
    found: list[Interface] = []
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family not in (socket.AF_INET, socket.AF_INET6) or "%" in entry.address:
                continue
            interface = _interface(entry.address, entry.netmask)
            if not interface.ip.is_link_local and interface not in found:
                found.append(interface)
    if not any(i.ip.is_loopback for i in found):
        found.append(LOOPBACK[0])
    return found


def _interface(address: str, netmask: str | None) -> Interface:
    """psutil gives netmasks in address form for both families; ipaddress wants a prefix
    length for IPv6."""
    ip = ipaddress.ip_address(address)
    if netmask is None:
        return ipaddress.ip_interface(ip)
    prefix = bin(int(ipaddress.ip_address(netmask))).count("1")
    return ipaddress.ip_interface(f"{ip}/{prefix}")


def advertised_addresses(interfaces: Sequence[Interface]) -> list[str]:
    """Addresses to advertise: outward-facing ones first, loopback last."""
    ordered = sorted(interfaces, key=lambda i: (i.ip.is_loopback, i.ip.version, str(i.ip)))
    return list(dict.fromkeys(str(i.ip) for i in ordered))


def ports_of_endpoints(endpoints: Sequence[str]) -> list[int]:
    """TCP ports of bound endpoints such as `tcp/127.0.0.1:41233` or `tls/[::1]:7447`."""
    ports = []
    for endpoint in endpoints:
        protocol, _, address = endpoint.partition("/")
        port = address.split("#", 1)[0].rpartition(":")[2]
        if protocol in ("tcp", "tls") and port.isdigit() and int(port) not in ports:
            ports.append(int(port))
    return ports


async def listen_ports(transport: object, api_port: int | None) -> list[int]:
    """The ports this node listens on: its transport's bound ones, then its API's."""
    ports = []
    if isinstance(transport, ListensOnEndpoints):
        ports = ports_of_endpoints(await transport.listen_endpoints())
    if api_port and api_port not in ports:
        ports.append(api_port)
    return ports


async def connect_rtt_ms(address: str, port: int, timeout: float) -> float | None:
    """Milliseconds a TCP connect took, or None when it failed or timed out."""
    started = time.perf_counter()
    with anyio.move_on_after(timeout):
        try:
            stream = await anyio.connect_tcp(address, port)
        except OSError:
            return None
        elapsed = (time.perf_counter() - started) * 1000.0
        await stream.aclose()
        return elapsed
    return None


class ReachabilityProber:
    """Probes live peers on a jittered interval; `reachability()` is what to advertise.

    An edge is dropped when a round completes every probe of that peer with no answer;
    a round cut short by its budget leaves the older observation to age out by its TTL.
    """

    def __init__(self, *, node_id: NodeId,
                 peers: Callable[[], Mapping[NodeId, NodeTelemetry]],
                 interfaces: Callable[[], list[Interface]] = local_interfaces,
                 interval: float = PROBE_INTERVAL_SECONDS,
                 connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
                 round_budget: float = ROUND_BUDGET_SECONDS,
                 concurrency: int = MAX_CONCURRENT_PROBES,
                 edge_ttl: float = EDGE_TTL_SECONDS,
                 peers_per_round: int = PEERS_PER_ROUND,
                 clock: Callable[[], float] = time.time) -> None:
        self._node_id = node_id
        self._peers = peers
        self._interfaces = interfaces
        self._interval = interval
        self._connect_timeout = connect_timeout
        self._round_budget = round_budget
        self._concurrency = concurrency
        self._edge_ttl = edge_ttl
        self._peers_per_round = peers_per_round
        self._clock = clock
        self._turns: list[NodeId] = []  # live peers, the next to probe first
        self._own: list[Interface] = []
        self._ports: list[int] = []
        self._edges: dict[NodeId, PeerReachability] = {}

    def set_listen_ports(self, ports: Sequence[int]) -> None:
        self._ports = list(ports)

    def reachability(self) -> Reachability:
        """This node's addresses and ports, and its edges still within their TTL."""
        now = self._clock()
        own = self._own or self._interfaces()
        edges = [e for _, e in sorted(self._edges.items())
                 if now - e.observed_at <= e.ttl_seconds]
        return Reachability(addresses=advertised_addresses(own), listen_ports=self._ports,
                            peers=edges)

    async def run(self, transport: object = None, api_port: int | None = None) -> None:
        """Learn this node's bound ports from `transport` and `api_port`, then probe peers
        every interval, jittered so nodes started together do not probe in lockstep."""
        self._ports = await listen_ports(transport, api_port)
        while True:
            await self.probe_round()
            await anyio.sleep(self._interval * random.uniform(0.8, 1.2))

    def _next_peers(self, live: Sequence[NodeId]) -> list[NodeId]:
        """The peers whose turn it is: the longest unprobed first, newcomers at the end."""
        present = set(live)
        self._turns = [node for node in self._turns if node in present]
        known = set(self._turns)
        newcomers = [node for node in live if node not in known]
        random.shuffle(newcomers)  # nodes started together do not all probe one peer
        self._turns.extend(newcomers)
        chosen = self._turns[:self._peers_per_round]
        self._turns = self._turns[len(chosen):] + chosen
        return chosen

    async def probe_round(self) -> None:
        """Probe the peers whose turn it is, then replace the edges this round settled."""
        self._own = self._interfaces()
        own_addresses = advertised_addresses(self._own)
        readings = {node: reading for node, reading in self._peers().items()
                    if node != self._node_id}
        targets = {node: probe_targets(own_addresses, readings[node].reachability)
                   for node in self._next_peers(sorted(readings))}
        rounds_per_turn = max(1, math.ceil(len(readings) / self._peers_per_round))
        answered: dict[NodeId, dict[str, float]] = {node: {} for node in targets}
        pending = {node: len(pairs) for node, pairs in targets.items()}
        limiter = anyio.Semaphore(self._concurrency)
        observed_at = self._clock()

        async def probe(node: NodeId, address: str, port: int) -> None:
            async with limiter:
                rtt = await connect_rtt_ms(address, port, self._connect_timeout)
            if rtt is not None:
                best = answered[node].get(address)
                answered[node][address] = rtt if best is None else min(best, rtt)
            pending[node] -= 1

        with anyio.move_on_after(self._round_budget):
            async with anyio.create_task_group() as tasks:
                for node, pairs in targets.items():
                    for address, port in pairs:
                        tasks.start_soon(probe, node, address, port)
        for node in list(self._edges):
            if node not in readings:
                del self._edges[node]  # no live telemetry: not a peer any more
        for node, found in answered.items():
            if found:
                self._edges[node] = PeerReachability(
                    node_id=node, addresses=rank_addresses(found, self._own),
                    observed_at=observed_at, ttl_seconds=self._edge_ttl * rounds_per_turn)
            elif pending[node] == 0:
                self._edges.pop(node, None)
