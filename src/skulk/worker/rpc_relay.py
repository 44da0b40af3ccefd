"""Members-only links to an engine's side channel that has no security of its own (ggml
RPC): the server listens on loopback only, and other nodes reach it through a pair of
relays that speak TLS with the cluster's node certificates in between.

    head runner ──TCP──▶ forwarder (head's node, 127.0.0.1:ephemeral)
                ══TLS══▶ relay server (serving node, the rank's ring port)
                ──TCP──▶ RPC server (serving node, 127.0.0.1:ephemeral)

The relay server admits a connection only when the client's certificate is one the
cluster CA issued to a member that is not revoked; the forwarder checks the server's
certificate names the node the master placed the rank on. Once the relay server has
dialled its target it sends one byte (`READY`), so a forwarder never passes on a link whose
far end is not there.

The bytes cross per token, so they are pumped by the native core (`skulk._native`, built
from rust/relay): TLS by rustls, on a tokio thread of its own that never takes the GIL.
This module keeps the decisions: which ports, which certificates, and the revocation list,
which it hands over again whenever it changes (the open links to a node now revoked end at
once). On an `--insecure` cluster (no trust material) the relays carry plain TCP: the same
check as the rest of that cluster's plane, which is none.
"""

import socket
from collections.abc import Set
from dataclasses import dataclass

from loguru import logger

from skulk import _native
from skulk.shared.types.ids import NodeId
from skulk.trust.files import TlsFiles

READY: bytes = _native.READY
HANDSHAKE_TIMEOUT_SECONDS: float = _native.HANDSHAKE_TIMEOUT_SECONDS


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for a server that takes a port number)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _log_refusal(message: str) -> None:
    logger.warning("rpc relay: {}", message)


def _pem_paths(tls: TlsFiles | None) -> tuple[str, str, str] | None:
    if tls is None:
        return None
    return (str(tls.ca_certificate), str(tls.certificate), str(tls.private_key))


@dataclass
class Relay:
    """One listening relay; `close` stops it and ends its open links."""

    _native_relay: _native.Relay

    @property
    def port(self) -> int:
        return self._native_relay.port

    @property
    def endpoint(self) -> str:
        """`127.0.0.1:port`, for a forwarder (where the head runner dials)."""
        return f"127.0.0.1:{self.port}"

    @property
    def refused(self) -> int:
        """Links refused: a revoked member, or a far end that never said `READY`."""
        return self._native_relay.refused

    @property
    def open_links(self) -> int:
        return self._native_relay.open_links

    def revoke(self, revoked: Set[NodeId]) -> int:
        """Refuse these nodes from now on and end their open links (how many it ended)."""
        return self._native_relay.set_revoked(sorted(revoked))

    def close(self) -> None:
        self._native_relay.close()


def serve(listen: tuple[str, int], target: tuple[str, int], tls: TlsFiles | None,
          revoked: Set[NodeId]) -> Relay:
    """A relay server on `listen` admitting members not in `revoked` and carrying each
    link to `target` on loopback."""
    return Relay(_native.serve_relay(listen[0], listen[1], target[0], target[1],
                                     _pem_paths(tls), sorted(revoked), _log_refusal))


def forward(remote: tuple[str, int], tls: TlsFiles | None, peer_node: NodeId | None,
            revoked: Set[NodeId] = frozenset()) -> Relay:
    """A forwarder on a loopback port carrying each connection to the relay server of
    `peer_node` at `remote` (with `tls`, its certificate must name `peer_node`, which must
    not be in `revoked`)."""
    return Relay(_native.forward_relay(remote[0], remote[1], _pem_paths(tls), peer_node,
                                       sorted(revoked), _log_refusal))
