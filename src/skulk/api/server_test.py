import asyncio
import gc
import os
import socket

import anyio
import httpx
import pytest
from fastapi import FastAPI

from skulk.api.server import TICK_SECONDS, NodeServer, bind_api_socket, serve_api
from skulk.startup_failure import ENVIRONMENT, StartupFailure
from skulk.testing.ports import free_port


def test_a_taken_api_port_is_a_startup_failure_not_an_exit() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(StartupFailure) as refused:
            bind_api_socket("127.0.0.1", port)
    assert refused.value.exit_code == ENVIRONMENT
    assert f"the API port {port} is already in use" in refused.value.message


def test_a_free_port_is_bound_for_uvicorn() -> None:
    with bind_api_socket("127.0.0.1", 0) as sock:
        assert sock.getsockname()[1] > 0


def _registered_but_closed(loop: asyncio.AbstractEventLoop) -> list[int]:
    """Descriptor numbers the loop still watches that are closed (`remove_reader` says
    whether one was registered; a closed descriptor fails `fstat`)."""
    closed = []
    for descriptor in range(3, 1024):
        try:
            os.fstat(descriptor)
        except OSError:
            if loop.remove_reader(descriptor):
                closed.append(descriptor)
    return closed


@pytest.mark.anyio
async def test_a_cancelled_api_leaves_no_closed_socket_registered_with_the_loop() -> None:
    loop = asyncio.get_running_loop()
    port = free_port()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(serve_api, FastAPI(), "127.0.0.1", port)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                while True:  # uvicorn is listening once a request gets an answer
                    try:
                        await client.get("/")
                        break
                    except httpx.ConnectError:
                        await anyio.sleep(0.05)
                # The client keeps its connection open while the API is cancelled.
                tasks.cancel_scope.cancel()
        await anyio.sleep(0.05)  # aborted transports close on the loop's next turn
        gc.collect()  # an unclosed transport would close its socket here
        assert _registered_but_closed(loop) == []


@pytest.mark.anyio
async def test_the_api_ticks_once_a_second_and_keeps_its_date_header_fresh(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ticks: list[int] = []
    on_tick = NodeServer.on_tick

    async def counted(self: NodeServer, counter: int) -> bool:
        ticks.append(counter)
        return await on_tick(self, counter)

    monkeypatch.setattr(NodeServer, "on_tick", counted)
    port = free_port()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(serve_api, FastAPI(), "127.0.0.1", port)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                while True:
                    try:
                        first = await client.get("/")
                        break
                    except httpx.ConnectError:
                        await anyio.sleep(0.05)
                started = len(ticks)
                await anyio.sleep(3 * TICK_SECONDS)
                later = await client.get("/")
            tasks.cancel_scope.cancel()
    assert 1 <= len(ticks) - started <= 4  # uvicorn's own loop would have ticked 30 times
    assert all(count % 10 == 0 for count in ticks)  # each tick refreshes the date
    assert first.headers["date"] != later.headers["date"]
