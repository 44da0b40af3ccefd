"""Serving the API app with uvicorn inside a node that owns its signals."""

import asyncio
import contextlib
import errno
import socket
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI

from skulk.api.connection import ExposeConnection
from skulk.startup_failure import StartupFailure

# Uvicorn's main loop ticks every 0.1 s, to see whether it should exit and to refresh its
# Date header, which changes once a second. A node stops it by cancelling it, never through
# `should_exit`, so it ticks once a second: ten wakes a second were half of an idle node's.
TICK_SECONDS = 1.0
_TICKS_PER_SECOND = 10  # uvicorn's `on_tick` refreshes the date when its count is a multiple


class NodeServer(uvicorn.Server):
    """Uvicorn without its own signal handling (the node owns SIGINT and SIGTERM), ticking
    once a second."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        ticks = 0
        while not await self.on_tick(ticks):
            await asyncio.sleep(TICK_SECONDS)
            ticks = (ticks + _TICKS_PER_SECOND) % 864000  # uvicorn's own wrap, a day


def bind_api_socket(host: str, port: int) -> socket.socket:
    """The API's listening socket, bound here rather than by uvicorn, which reports a
    taken port by logging and exiting the process."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        taken = error.errno == errno.EADDRINUSE
        raise StartupFailure(
            f"the API port {port} is already in use: choose another with --api-port" if taken
            else f"the API cannot listen on {host}:{port} ({error.strerror}): "
                 "check --api-host and --api-port") from error
    sock.set_inheritable(True)
    return sock


async def serve_api(app: FastAPI, host: str, port: int) -> None:
    """Serve `app` until cancelled."""
    sock = bind_api_socket(host, port)
    config = uvicorn.Config(ExposeConnection(app), host=host, port=port, log_level="warning",
                            lifespan="off")
    server = NodeServer(config)
    with sock:
        try:
            await server.serve(sockets=[sock])
        finally:
            _stop_at_once(server)


def _stop_at_once(server: uvicorn.Server) -> None:
    """Stop listening and drop every connection: the requests in progress see their
    clients gone and end as they do then (a cancelled one would log a traceback each).

    Uvicorn shuts down only when it leaves its main loop on its own. Cancelled (the node
    stopping), it left its listening socket and its connections registered with the event
    loop while `with sock` and the garbage collector closed them; a socket opened later in
    the process with a reused descriptor number then failed in the loop (ENOENT)."""
    for listener in getattr(server, "servers", ()):  # set once uvicorn has started
        listener.close()
    for connection in list(server.server_state.connections):
        connection.transport.abort()
