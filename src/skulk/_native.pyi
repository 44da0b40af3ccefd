"""Skulk's native core (rust/native, built by maturin): the bytes that cross per token.

Python keeps the decisions; these calls only start, reconfigure and stop the pumps, which
run on the core's own threads without the GIL.
"""

from collections.abc import Callable

READY: bytes
HANDSHAKE_TIMEOUT_SECONDS: float

class Relay:
    """One listening relay (a members-only server or a head's loopback forwarder)."""

    @property
    def port(self) -> int: ...
    @property
    def refused(self) -> int: ...
    @property
    def open_links(self) -> int: ...
    def set_revoked(self, nodes: list[str]) -> int: ...
    def close(self) -> None: ...

def serve_relay(listen_host: str, listen_port: int, target_host: str, target_port: int,
                tls: tuple[str, str, str] | None, revoked: list[str],
                log: Callable[[str], None]) -> Relay: ...
def forward_relay(remote_host: str, remote_port: int, tls: tuple[str, str, str] | None,
                  peer_node: str | None, revoked: list[str],
                  log: Callable[[str], None]) -> Relay: ...
