import asyncio
import select
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import cast

import pytest

from skulk.api.connection import Connection
from skulk.api.held_writes import hold_writes


def readable(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0.05)[0])


@asynccontextmanager
async def connected() -> AsyncIterator[tuple[Connection, socket.socket]]:
    """A server-side connection (its transport, as the API holds it) and its client."""
    accepted: asyncio.Future[asyncio.StreamWriter] = asyncio.get_running_loop().create_future()

    async def serve(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    client = socket.create_connection(server.sockets[0].getsockname()[:2])
    try:
        writer = await accepted
        yield cast(Connection, SimpleNamespace(transport=writer.transport)), client
    finally:
        client.close()
        server.close()


@pytest.mark.anyio
async def test_what_one_turn_writes_leaves_together_at_the_next() -> None:
    async with connected() as (connection, client):
        assert hold_writes(connection)
        connection.transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        connection.transport.write(b"data: first token\n\n")
        assert not readable(client)  # held: nothing has left yet
        await asyncio.sleep(0)  # the loop's next turn
        assert readable(client)
        assert client.recv(1024) == b"HTTP/1.1 200 OK\r\n\r\ndata: first token\n\n"
        connection.transport.write(b"data: second\n\n")  # later writes go as they come
        assert readable(client) and client.recv(1024) == b"data: second\n\n"


@pytest.mark.anyio
async def test_released_once_the_first_token_is_written_it_leaves_at_once() -> None:
    async with connected() as (connection, client):
        held = hold_writes(connection)
        assert held is not None
        connection.transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        connection.transport.write(b"data: first token\n\n")
        held.release()  # no turn of the loop
        assert readable(client)
        assert client.recv(1024) == b"HTTP/1.1 200 OK\r\n\r\ndata: first token\n\n"
        held.release()  # again: nothing
        await asyncio.sleep(0)  # the turn that would have released it: nothing either
        connection.transport.write(b"data: second\n\n")
        assert readable(client) and client.recv(1024) == b"data: second\n\n"


@pytest.mark.anyio
async def test_no_connection_or_a_socket_gone_holds_nothing() -> None:
    assert hold_writes(None) is None  # served without uvicorn's cycle (an ASGI transport)
    closed = socket.socket()
    closed.close()
    transport = SimpleNamespace(get_extra_info=lambda name: closed)
    assert hold_writes(cast(Connection, SimpleNamespace(transport=transport))) is None
    await asyncio.sleep(0)  # nothing scheduled that could fail
