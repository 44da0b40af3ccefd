import socket

import anyio
import pytest

from skulk.routing import topics
from skulk.routing.router import Router
from skulk.routing.zenoh_transport import ZenohTransport
from skulk.shared.types.events import IndexedEvent, TaskDeleted
from skulk.shared.types.ids import NodeId, SessionId, TaskId


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def event(index: int) -> IndexedEvent:
    return IndexedEvent(index=index, session=SessionId("s"),
                        event=TaskDeleted(task_id=TaskId("t")))


@pytest.mark.anyio
async def test_a_lone_session_hears_itself() -> None:
    transport = await ZenohTransport.open(listen=["tcp/127.0.0.1:0"], connect=[])
    try:
        node = Router(transport, namespace="ns", node_id=NodeId("a"))
        async with node.subscribe(topics.GLOBAL_EVENTS) as received:
            await node.publish(topics.GLOBAL_EVENTS, event(3))
            with anyio.fail_after(5):
                async for got in received:
                    assert got.index == 3
                    break
    finally:
        await transport.close()


@pytest.mark.anyio
async def test_two_peers_exchange_messages_in_order() -> None:
    port = free_port()
    first = await ZenohTransport.open(listen=[f"tcp/127.0.0.1:{port}"], connect=[])
    second = await ZenohTransport.open(listen=["tcp/127.0.0.1:0"],
                                       connect=[f"tcp/127.0.0.1:{port}"])
    try:
        a = Router(first, namespace="ns", node_id=NodeId("a"))
        b = Router(second, namespace="ns", node_id=NodeId("b"))
        async with b.subscribe(topics.GLOBAL_EVENTS) as at_b:
            received: list[int] = []
            with anyio.fail_after(10):
                # The peers connect asynchronously: publish until the first one lands.
                while not received:
                    await a.publish(topics.GLOBAL_EVENTS, event(-1))
                    with anyio.move_on_after(0.2):
                        async for got in at_b:
                            received.append(got.index)
                            break
                for index in range(100):
                    await a.publish(topics.GLOBAL_EVENTS, event(index))
                async for got in at_b:
                    if got.index >= 0:
                        received.append(got.index)
                    if len(received) == 101:
                        break
            assert received[1:] == list(range(100))
    finally:
        await second.close()
        await first.close()
