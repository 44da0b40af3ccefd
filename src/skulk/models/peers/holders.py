"""Which peers hold a model's files, nearest first: pure, from telemetry."""

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from skulk.models.store.layer_files import covers
from skulk.shared.types.ids import ModelId, NodeId
from skulk.shared.types.model_cards import ModelFormat
from skulk.shared.types.telemetry import HeldModel, NodeTelemetry

_UNOBSERVED_RTT = float("inf")


@dataclass(frozen=True)
class PeerHolding:
    """A peer that serves a model's files, and the base URLs to reach it, best first."""

    node_id: NodeId
    held: HeldModel
    base_urls: tuple[str, ...]


def peers_holding(readings: Mapping[NodeId, NodeTelemetry], model_id: ModelId,
                  format: ModelFormat, exclude: NodeId, *, secure: bool,
                  layers: tuple[int, int] | None = None) -> list[PeerHolding]:
    """Peers other than `exclude` (this node) whose store holds `model_id` in `format` and
    that serve it (a `weights_port`), nearest first. Given a pipeline stage's `layers`, a
    peer's stage copy that covers them will do (its whole copy preferred); else only a
    whole copy.

    Nearest means the lowest round-trip time this node's own reachability probe measured
    to the peer (`readings[exclude].reachability.peers`); peers it has not observed come
    after, by node id. A peer's URLs are the addresses this node reached it on, best first,
    then the addresses the peer advertises (loopback only when this node reached it there,
    i.e. it runs on the same host)."""
    own = readings.get(exclude)
    edges = {} if own is None else {edge.node_id: edge for edge in own.reachability.peers}
    scheme = "https" if secure else "http"
    found: list[tuple[float, PeerHolding]] = []
    for node_id, reading in readings.items():
        held = next((h for h in sorted(reading.held_models, key=lambda h: h.layers is not None)
                     if h.model_id == model_id and h.format == format
                     and covers(h.layers, layers)), None)
        if node_id == exclude or held is None or reading.weights_port is None:
            continue
        edge = edges.get(node_id)
        observed = [] if edge is None else [a.address for a in edge.addresses]
        rtt = min((a.rtt_ms for a in edge.addresses), default=_UNOBSERVED_RTT) \
            if edge is not None else _UNOBSERVED_RTT
        advertised = [a for a in reading.reachability.addresses
                      if a not in observed and not _is_loopback(a)]
        urls = tuple(f"{scheme}://{_host(address)}:{reading.weights_port}"
                     for address in observed + advertised)
        if urls:
            found.append((rtt, PeerHolding(node_id, held, urls)))
    found.sort(key=lambda item: (item[0], item[1].node_id))
    return [holding for _, holding in found]


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address
