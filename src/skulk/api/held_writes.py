"""A response's first bytes in one segment.

A streamed response writes its status line and headers, then its dialect's opening
events, then its first token: three socket writes, each of which wakes the client (on a
small machine, often onto the core the node runs on) before the next is written. Held
with TCP_CORK until the event loop's next turn, everything the response writes in this
turn (up to its first token, which it already has when it starts) leaves together.
"""

import asyncio
import socket

from skulk.api.connection import Connection


def hold_until_next_turn(connection: Connection | None) -> None:
    """Hold the connection's partial segments until the event loop's next turn (nothing
    where the option or the socket is not there: the writes then go as they come)."""
    if connection is None or not hasattr(socket, "TCP_CORK"):
        return
    sock = connection.transport.get_extra_info("socket")
    if sock is None or not _set_cork(sock, 1):
        return
    asyncio.get_running_loop().call_soon(_set_cork, sock, 0)


def _set_cork(sock: socket.socket, value: int) -> bool:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, value)
    except OSError:  # closed meanwhile (the client left), or not TCP
        return False
    return True
