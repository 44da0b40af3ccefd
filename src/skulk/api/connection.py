"""The client's connection behind a request, for the native byte path of its tokens.

Uvicorn gives an application only `send`; its HTTP/1.1 protocol (httptools) writes what
it is sent to a transport the app never sees. `ExposeConnection`, wrapped around the app
where uvicorn serves it, puts uvicorn's own request cycle in the scope, so that a stream
can hand its socket to the relay (`direct_stream`) once its response is under way. Served
any other way (a test's ASGI transport, another protocol or server) there is no
connection in the scope, and every stream stays on the Python path.
"""

import asyncio
from typing import Protocol, cast

from starlette.types import ASGIApp, Receive, Scope, Send

_SCOPE_KEY = "skulk.connection"
_HTTPTOOLS_CYCLE = "uvicorn.protocols.http.httptools_impl"


class _Flow(Protocol):
    write_paused: bool


class Connection(Protocol):
    """What the byte path reads of uvicorn's request cycle (httptools_impl)."""

    transport: asyncio.Transport
    flow: _Flow
    chunked_encoding: bool | None
    disconnected: bool


class ExposeConnection:
    """The ASGI app `app`, with uvicorn's request cycle in each HTTP request's scope."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cycle = getattr(send, "__self__", None)
        if scope["type"] == "http" and type(cycle).__module__ == _HTTPTOOLS_CYCLE:
            scope[_SCOPE_KEY] = cycle
        await self.app(scope, receive, send)


def connection_of(scope: Scope) -> Connection | None:
    """The request's connection when the byte path may write to its socket: uvicorn's
    HTTP/1.1 over plain TCP (not TLS, whose bytes only the transport can write)."""
    cycle = scope.get(_SCOPE_KEY)
    if cycle is None or not _has_what_the_byte_path_reads(cycle):
        return None
    connection = cast(Connection, cycle)
    if connection.transport.get_extra_info("sslcontext") is not None:
        return None
    return connection


def _has_what_the_byte_path_reads(cycle: object) -> bool:
    """These are uvicorn's internals, not its API: a uvicorn that renamed one keeps every
    stream on the Python path instead of failing it."""
    flow = getattr(cycle, "flow", None)
    return all(hasattr(cycle, name) for name in ("transport", "chunked_encoding",
                                                  "disconnected")) \
        and hasattr(flow, "write_paused")
