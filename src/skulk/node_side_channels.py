"""A worker node's side channels beside the cluster plane, both admitting only members: the
server of its stored weights, and the ggml RPC links of split llama.cpp instances (TLS
inside the runners' own sockets, `skulk.worker.rpc_channel`)."""

from collections.abc import Callable, Iterable, Mapping, Set
from pathlib import Path

from skulk.node_weights import NodeWeights
from skulk.shared.endpoints import endpoint_host
from skulk.shared.replica import StateReplica
from skulk.shared.types.events import NodeRevoked, StateSnapshotHydrated
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.trust.files import TlsFiles
from skulk.trust.revocations import load_revoked
from skulk.worker.device_links import DeviceLinks


def side_channel_host(listen: list[str]) -> str:
    """Where the side channels listen: the node's first `--listen` address, else all."""
    return endpoint_host(listen[0]) if listen else "0.0.0.0"


def revoked_members(data_dir: Path, in_state: Callable[[], Iterable[NodeId]]
                    ) -> Callable[[], Set[NodeId]]:
    """Expelled members: as this node last knew them until its replica has synced."""
    revoked_at_start = frozenset(load_revoked(data_dir))
    return lambda: revoked_at_start.union(in_state())


def node_weights(node_id: NodeId, data_dir: Path, listen: list[str], tls: TlsFiles | None,
                 revoked: Callable[[], Set[NodeId]],
                 readings: Callable[[], Mapping[NodeId, NodeTelemetry]]) -> NodeWeights:
    return NodeWeights(node_id=node_id, models_dir=data_dir / "models", tls=tls,
                       host=side_channel_host(listen), revoked=revoked, readings=readings)


def device_links(data_dir: Path, listen: list[str], tls: TlsFiles | None,
                 revoked: Callable[[], Set[NodeId]]) -> DeviceLinks:
    return DeviceLinks(tls=tls, host=side_channel_host(listen),
                       cache_dir=data_dir / "cache" / "rpc",
                       revoked=revoked)


async def runners_follow_revocations(replica: StateReplica, links: DeviceLinks) -> None:
    """Each revocation the replica applies (or a snapshot, which may bring some) reaches
    the runners of split instances at once: they end the open links to and from the
    revoked node."""
    async with replica.subscribe(kinds=(NodeRevoked, StateSnapshotHydrated)) as applied:
        async for _ in applied:
            links.revocations_changed()
