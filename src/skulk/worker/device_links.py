"""A node's share of the links of split instances whose head runs the model and whose other
ranks serve their device to it (llama.cpp over ggml RPC): the runner options that say
where each device server listens, where the head dials, and, on a secure cluster, the
node's trust material and revocation list, so that the runners' own links are TLS between
members (`skulk.worker.rpc_channel`; no relay sits between them).

Rank r's device server listens on the instance's ring port + r (the master allocates those
as for MLX rings) on this node's side-channel address. The node says when the revocation
list changes (`revocations_changed`): each runner given links here is told (a
`RevokedNodes` message), refuses the nodes on it and ends their open links.
"""

from collections.abc import Callable, Set
from pathlib import Path

from skulk.shared.types.ids import NodeId, RunnerId
from skulk.shared.types.instances import Instance
from skulk.trust.files import TlsFiles
from skulk.worker.runner.messages import LifecycleMessage, RevokedNodes

Tell = Callable[[LifecycleMessage], None]
"""How a runner is sent a message (its supervisor's `send`)."""


def ipv4_listen_host(host: str) -> str:
    """Where a device server may listen: ggml RPC's sockets are IPv4 only, so a node that
    listens on every interface (`::`) serves its device on every IPv4 one; a particular
    IPv6 address cannot carry a split."""
    if host in ("::", "[::]"):
        return "0.0.0.0"
    if ":" in host:
        raise ValueError(f"a split llama.cpp rank cannot serve its device on {host}: ggml "
                         "RPC listens on IPv4 only; give this node an IPv4 --listen address "
                         "(or tcp/[::]:PORT, which serves on every IPv4 interface too)")
    return host


class DeviceLinks:
    def __init__(self, *, tls: TlsFiles | None, host: str, cache_dir: Path,
                 revoked: Callable[[], Set[NodeId]]) -> None:
        self._tls = tls
        self._host = host
        self._cache_dir = cache_dir
        self._revoked = revoked
        self._linked: set[RunnerId] = set()  # runners given links, not yet closed
        self._runners: dict[RunnerId, Tell] = {}
        self._last_revoked: frozenset[NodeId] = frozenset()

    def revocations_changed(self) -> None:
        """Hand the revocation list to every runner with links, if it changed: they refuse
        the nodes on it from now on and end the links open to them."""
        revoked = frozenset(self._revoked())
        if revoked == self._last_revoked:
            return
        self._last_revoked = revoked
        for tell in self._runners.values():
            tell(RevokedNodes(nodes=sorted(revoked)))

    def _security(self) -> dict[str, str]:
        if self._tls is None:
            return {}  # an insecure cluster: plain TCP, as the rest of its plane
        return {"rpc_ca_certificate": str(self._tls.ca_certificate),
                "rpc_certificate": str(self._tls.certificate),
                "rpc_private_key": str(self._tls.private_key),
                "rpc_revoked": ",".join(sorted(self._revoked()))}

    async def options_for(self, instance: Instance, runner_id: RunnerId) -> dict[str, str]:
        """Say where this rank's links are: a device server's endpoint (this node, its
        ring port), or, for the head, each other rank's endpoint and node, and every
        rank's layer count."""
        if instance.ring_port is None:
            raise ValueError(f"instance {instance.instance_id} is split but has no ring port")
        ranks = sorted(instance.shards.values(), key=lambda s: s.rank)
        shard = instance.shards[runner_id]
        self._linked.add(runner_id)
        if shard.rank != 0:
            return {"rpc_listen": f"{ipv4_listen_host(self._host)}:"
                                  f"{instance.ring_port + shard.rank}",
                    "rpc_cache_dir": str(self._cache_dir), **self._security()}
        servers = [f"{other.ring_host or '127.0.0.1'}:{instance.ring_port + other.rank}"
                   for other in ranks[1:]]
        peers = {"rpc_peers": ",".join(other.node_id for other in ranks[1:])} \
            if self._tls is not None else {}
        return {"rpc_servers": ",".join(servers), **peers,
                "rpc_layers": ",".join(str(s.end_layer - s.start_layer) for s in ranks),
                **self._security()}

    def attach(self, runner_id: RunnerId, tell: Tell) -> None:
        """The runner given links for `runner_id` is started: revocations reach it by
        `tell` from now on."""
        if runner_id in self._linked:
            self._runners[runner_id] = tell

    def close(self, runner_id: RunnerId) -> None:
        """The rank's runner has ended (its links ended with it)."""
        self._linked.discard(runner_id)
        self._runners.pop(runner_id, None)
