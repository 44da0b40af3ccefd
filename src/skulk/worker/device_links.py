"""A node's share of the links of split instances whose head runs the model and whose other
ranks serve their device to it (llama.cpp over ggml RPC): relays that admit only cluster
members in front of each device server, forwarders on the head's node, and the runner
options that say where they are.

Rank r's relay listens on the instance's ring port + r (the master allocates those as for
MLX rings) on this node's listening address; its device server on a free loopback port.
The node says when the revocation list changes (`revocations_changed`): every relay then
refuses the nodes on it and ends their open links.
"""

from collections.abc import Callable, Set
from pathlib import Path

import anyio

from skulk.shared.types.ids import NodeId, RunnerId
from skulk.shared.types.instances import Instance
from skulk.trust.files import TlsFiles
from skulk.worker import rpc_relay
from skulk.worker.rpc_relay import Relay, free_loopback_port


class DeviceLinks:
    def __init__(self, *, tls: TlsFiles | None, host: str, cache_dir: Path,
                 revoked: Callable[[], Set[NodeId]]) -> None:
        self._tls = tls
        self._host = host
        self._cache_dir = cache_dir
        self._revoked = revoked
        self._relays: dict[RunnerId, list[Relay]] = {}
        self._last_revoked: frozenset[NodeId] = frozenset()

    def revocations_changed(self) -> None:
        """Hand the revocation list to every open relay, if it changed: they refuse the
        nodes on it from now on and end the links open to them."""
        revoked = frozenset(self._revoked())
        if revoked == self._last_revoked:
            return
        self._last_revoked = revoked
        for relays in self._relays.values():
            for relay in relays:
                relay.revoke(revoked)

    async def options_for(self, instance: Instance, runner_id: RunnerId) -> dict[str, str]:
        """Open this rank's relays and say where they are: a device server's loopback
        endpoint behind a relay on its ring port, or, for the head, a forwarder to each
        other rank's relay and every rank's layer count."""
        if instance.ring_port is None:
            raise ValueError(f"instance {instance.instance_id} is split but has no ring port")
        ranks = sorted(instance.shards.values(), key=lambda s: s.rank)
        shard = instance.shards[runner_id]
        if shard.rank != 0:
            target = free_loopback_port()
            relay = await anyio.to_thread.run_sync(
                rpc_relay.serve, (self._host, instance.ring_port + shard.rank),
                ("127.0.0.1", target), self._tls, frozenset(self._revoked()))
            self._relays.setdefault(runner_id, []).append(relay)
            return {"rpc_listen": f"127.0.0.1:{target}",
                    "rpc_cache_dir": str(self._cache_dir)}
        forwarders = []
        for other in ranks[1:]:
            remote = (other.ring_host or "127.0.0.1", instance.ring_port + other.rank)
            forwarder = await anyio.to_thread.run_sync(
                rpc_relay.forward, remote, self._tls,
                other.node_id if self._tls is not None else None, frozenset(self._revoked()))
            forwarders.append(forwarder)
            self._relays.setdefault(runner_id, []).append(forwarder)
        return {"rpc_servers": ",".join(f.endpoint for f in forwarders),
                "rpc_layers": ",".join(str(s.end_layer - s.start_layer) for s in ranks)}

    def close(self, runner_id: RunnerId) -> None:
        """Stop the rank's relays (its runner has ended); their open links end too."""
        for relay in self._relays.pop(runner_id, []):
            relay.close()
