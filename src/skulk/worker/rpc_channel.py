"""Members-only ggml RPC links with no relay: TLS inside llama.cpp's own sockets.

ggml RPC has no authentication of its own. Skulk's patch to it (tools/patches/
ggml-rpc-secure-channel.patch) lets a process hand it a channel that every connection it
makes or accepts goes through; the native core (`skulk._native`, rust/channel/src/
channel.rs) implements that channel with rustls, so a split model's bytes cross as TLS 1.3
between the cluster's node certificates, on llama.cpp's own threads:

    head runner ══TLS══▶ device server runner (serving node, the rank's ring port)

A device server admits a client whose certificate the cluster CA issued to a member not
revoked (and quietly drops one that sends nothing, such as its own readiness probe); the
head checks each server's certificate names the node the master placed that rank on. A
revocation reaches a runner as a message (`RevokedNodes`): the links to and from the
nodes on it end at once, and no new one opens. This module keeps the decisions
(certificates, which node is where, the revocation list); on an `--insecure` cluster (no
trust material) nothing is installed and the links are plain TCP, as the rest of that
cluster's plane.
"""

from collections.abc import Mapping, Set
from dataclasses import dataclass

from loguru import logger

from skulk import _native
from skulk.shared.types.ids import NodeId

HANDSHAKE_TIMEOUT_SECONDS: float = _native.HANDSHAKE_TIMEOUT_SECONDS


@dataclass(frozen=True)
class ChannelFiles:
    """The node's trust material, as PEM paths (`skulk.trust.files.TlsFiles`)."""

    ca_certificate: str
    certificate: str
    private_key: str


def _log_refusal(message: str) -> None:
    logger.warning("{}", message)


def install(files: ChannelFiles, peers: Mapping[str, NodeId], revoked: Set[NodeId],
            setter: int) -> None:
    """Make this process's ggml RPC links members-only: `peers` maps each device server's
    `host:port` this process dials to the node it must be (empty for a device server);
    `setter` is the address of `ggml_backend_rpc_set_channel` in the ggml RPC library
    this process uses (`rpc_lib.channel_setter`)."""
    _native.channel_configure((files.ca_certificate, files.certificate, files.private_key),
                              dict(peers), sorted(revoked), _log_refusal)
    _native.channel_install(setter)


def set_revoked(revoked: Set[NodeId]) -> int:
    """Refuse these nodes from now on and end their open links (how many it ended)."""
    return _native.channel_set_revoked(sorted(revoked))


def refused() -> int:
    """Connections this process refused (a probe that sent nothing not counted)."""
    return _native.channel_refused()


def open_links() -> int:
    """Channel links open now in this process."""
    return _native.channel_open_links()


def measure_cpu(on: bool = True) -> None:
    """Count the CPU time this process spends inside the channel's send and recv (a
    benchmark's reading; off by default)."""
    _native.channel_measure_cpu(on)


def cpu_spent() -> tuple[float, float, int]:
    """CPU seconds spent inside the channel's send and recv while measuring (TLS and the
    socket calls), the part of it in the socket calls (which a plain link makes too), and
    how many calls."""
    return _native.channel_cpu_spent()
