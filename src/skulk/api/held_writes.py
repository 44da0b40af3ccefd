"""A response's first bytes in one segment.

A streamed response writes its status line and headers, then its dialect's opening
events, then its first token: three socket writes, each of which wakes the client (on a
small machine, often onto the core the node runs on) before the next is written. Held
with TCP_CORK, everything the response writes up to its first token (which it already
has when it starts) leaves together: released by the stream as soon as its first token's
events are written (`HeldWrites.release`), and at the event loop's next turn at the
latest (a response that ends with its first chunk, an error). Waiting for that turn
made the first token wait for whatever else the loop had to do first, above all the
task's "running" status on its way through the master, the log and the replica: 1.5 ms
of the first token in an interleaved A/B (bench/README.md).
"""

import asyncio
import socket

from skulk.api.connection import Connection


class HeldWrites:
    """A connection's partial segments held until `release` (once; later calls do
    nothing), or the event loop's next turn."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock: socket.socket | None = sock
        self._at_next_turn = asyncio.get_running_loop().call_soon(self.release)

    def release(self) -> None:
        sock, self._sock = self._sock, None
        if sock is None:
            return
        self._at_next_turn.cancel()
        _set_cork(sock, 0)


def hold_writes(connection: Connection | None) -> HeldWrites | None:
    """Hold the connection's partial segments (None, and nothing held, where the option or
    the socket is not there: the writes then go as they come)."""
    if connection is None or not hasattr(socket, "TCP_CORK"):
        return None
    sock = connection.transport.get_extra_info("socket")
    if sock is None or not _set_cork(sock, 1):
        return None
    return HeldWrites(sock)


def _set_cork(sock: socket.socket, value: int) -> bool:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, value)
    except OSError:  # closed meanwhile (the client left), or not TCP
        return False
    return True
