"""Whether this node sees the cluster it belongs to, and which `--peer` endpoints fail.

A node that joined a cluster, whose agreed membership names other members, or that was
given `--peer` belongs to a larger cluster. Seeing no other member for a while, it is cut
off, not a cluster of one: it says so in its log every `WARN_EVERY_SECONDS` and in its
readings (`GET /cluster`'s `isolated`, `skulk status`, `skulk doctor`). Each `--peer`
endpoint is probed with a TCP connect, so a wrong port is named by its endpoint, also when
discovery found the cluster another way.
"""

import socket
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence, Set
from dataclasses import dataclass

import anyio
from loguru import logger

from skulk.shared.endpoints import endpoint_host, endpoint_port
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import ClusterLinks, NodeTelemetry, PeerLink

# Zenoh links, the first election and the members' first readings come within a few
# seconds: a node alone for this long is not just starting.
GRACE_SECONDS = 10.0
PROBE_INTERVAL_SECONDS = 5.0
WARN_EVERY_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class Probed:
    """One TCP connect: the addresses the endpoint's host resolved to, and why the
    connection failed (None: it opened)."""

    addresses: frozenset[str]
    problem: str | None


Probe = Callable[[str], Awaitable[Probed]]


def connect_once(host: str, port: int, timeout: float) -> Probed:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        return Probed(frozenset(), f"cannot resolve {host} ({error.strerror})")
    addresses = frozenset(str(info[4][0]) for info in infos)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return Probed(addresses, None)
    except ConnectionRefusedError:
        return Probed(addresses, "connection refused")
    except TimeoutError:
        return Probed(addresses, f"no answer within {timeout:g} s")
    except OSError as error:
        return Probed(addresses, (error.strerror or str(error)).lower())


async def probe_endpoint(endpoint: str) -> Probed:
    """A TCP connect to `tcp/HOST:PORT`, on a thread: resolving a name may block."""
    return await anyio.to_thread.run_sync(connect_once, endpoint_host(endpoint),
                                          endpoint_port(endpoint), CONNECT_TIMEOUT_SECONDS)


def listening_at(readings: Mapping[NodeId, NodeTelemetry], nodes: Set[NodeId]
                 ) -> set[tuple[str, int]]:
    """(address, port) pairs where `nodes` listen for the cluster, by their readings."""
    pairs = set()
    for node in nodes:
        reading = readings.get(node)
        if reading is None:
            continue
        for endpoint in reading.endpoints.cluster:
            port = endpoint_port(endpoint)
            # A wildcard bind answers on every address the node advertises.
            for address in {endpoint_host(endpoint), *reading.reachability.addresses}:
                pairs.add((address, port))
    return pairs


def peer_link(endpoint: str, probed: Probed, members: set[tuple[str, int]],
              own: set[tuple[str, int]], settled: bool) -> PeerLink:
    """How one `--peer` endpoint fares. That it answers but no member listens there is
    said only once `settled`: members' readings take a few seconds to arrive."""
    port = endpoint_port(endpoint)
    at = {(address, port) for address in probed.addresses}
    member = bool(at & members)
    problem = probed.problem
    if problem is None and not member and settled:
        problem = ("it is this node's own cluster endpoint" if at & own else
                   "it answers, but no member of this cluster listens there (is it a "
                   "member's cluster port, the one its --listen names?)")
    return PeerLink(endpoint=endpoint, reachable=probed.problem is None, member=member,
                    problem=problem)


def expected_company(own: NodeId, agreed: Sequence[NodeId], joined: bool,
                     peers: Sequence[str]) -> str | None:
    """Why this node should see other members, or None for a cluster of one."""
    reasons = []
    if joined:
        reasons.append("it joined a cluster another node made")
    others = sorted(set(agreed) - {own})
    if others:
        reasons.append(f"its cluster last agreed on {len(set(agreed) | {own})} members "
                       f"({', '.join(others)} besides it)")
    if peers:
        reasons.append(f"it was given --peer {', '.join(peers)}")
    return "; ".join(reasons) or None


def isolation_reason(expected: str, links: Sequence[PeerLink]) -> str:
    failing = [f"peer {link.endpoint}: {link.problem}" for link in links if link.problem]
    return (f"this node sees no other member of its cluster, though {expected}"
            + (f"; {'; '.join(failing)}" if failing else "")
            + ". It serves alone, as its own master, until it reaches one: check that "
            "--peer names a member's cluster endpoint (`skulk status` on a member lists "
            "them) and that this machine can reach it")


class IsolationWatch:
    """Probes the `--peer` endpoints every interval and judges whether the node is cut
    off; `links()` is what its readings carry."""

    def __init__(self, *, node_id: NodeId, peers: Sequence[str], joined: bool,
                 live: Callable[[], Set[NodeId]], agreed: Callable[[], Sequence[NodeId]],
                 readings: Callable[[], Mapping[NodeId, NodeTelemetry]],
                 probe: Probe = probe_endpoint, clock: Callable[[], float] = time.monotonic,
                 grace: float = GRACE_SECONDS, interval: float = PROBE_INTERVAL_SECONDS,
                 warn_every: float = WARN_EVERY_SECONDS) -> None:
        self._node_id = node_id
        self._peers = list(peers)
        self._joined = joined
        self._live = live
        self._agreed = agreed
        self._readings = readings
        self._probe = probe
        self._clock = clock
        self._grace = grace
        self._interval = interval
        self._warn_every = warn_every
        self._started = clock()
        self._alone_since: float | None = self._started  # alone until it sees a member
        self._warned_at: float | None = None
        self._links = ClusterLinks()

    def links(self) -> ClusterLinks:
        return self._links

    async def run(self) -> None:
        while True:
            await self.check()
            await anyio.sleep(self._interval)

    async def check(self) -> None:
        """Probe every `--peer`, judge, and say what changed (the isolation again every
        `warn_every` seconds while it lasts)."""
        probed = {endpoint: await self._probe(endpoint) for endpoint in self._peers}
        now = self._clock()
        live, readings = set(self._live()), self._readings()
        others = live - {self._node_id}
        members = listening_at(readings, others)
        own = listening_at(readings, {self._node_id})
        settled = now - self._started >= self._grace
        peers = [peer_link(endpoint, result, members, own, settled)
                 for endpoint, result in probed.items()]
        if others:
            self._alone_since = None
        elif self._alone_since is None:
            self._alone_since = now
        expected = expected_company(self._node_id, self._agreed(), self._joined, self._peers)
        isolated = (expected is not None and self._alone_since is not None
                    and now - self._alone_since >= self._grace)
        links = ClusterLinks(isolated=isolated, peers=peers, reason=isolation_reason(
            expected, peers) if isolated and expected is not None else None)
        self._report(links, now)
        self._links = links

    def _report(self, links: ClusterLinks, now: float) -> None:
        before = {link.endpoint: link.problem for link in self._links.peers}
        for link in links.peers:
            if link.problem is not None and link.problem != before.get(link.endpoint):
                if link.reachable:
                    logger.warning("peer {}: {}", link.endpoint, link.problem)
                else:
                    logger.warning("cannot reach peer {}: {}", link.endpoint, link.problem)
            elif link.problem is None and before.get(link.endpoint) is not None:
                logger.info("peer {} reached", link.endpoint)
        if links.isolated and (self._warned_at is None
                               or now - self._warned_at >= self._warn_every):
            logger.warning("{}", links.reason)
            self._warned_at = now
        elif self._links.isolated and not links.isolated:
            logger.info("this node sees other members of its cluster again")
        if not links.isolated:
            self._warned_at = None
