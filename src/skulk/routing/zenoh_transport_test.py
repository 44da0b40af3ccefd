import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from skulk.routing import topics
from skulk.routing.transport import Message, Subscription, TransportClosed
from skulk.routing.zenoh_transport import ZenohTransport
from skulk.shared.types.chunks import DataChunk, TokenChunk
from skulk.shared.types.ids import CommandId, NodeId
from skulk.testing.ports import free_port
from skulk.testing.routers import signing_router


async def until_heard(sender: ZenohTransport, key: str, received: Subscription) -> None:
    """Peers connect and learn each other's subscriptions asynchronously: probe until one
    probe lands, then drain the probes still in flight."""
    with anyio.fail_after(10):
        while True:
            await sender.publish(key, b"probe")
            with anyio.move_on_after(0.1):
                await anext(received)
                break
    with anyio.move_on_after(0.2):
        async for _ in received:
            pass


async def take(received: Subscription, count: int) -> list[Message]:
    taken: list[Message] = []
    with anyio.fail_after(5):
        async for message in received:
            if message.payload != b"probe":
                taken.append(message)
            if len(taken) == count:
                break
    return taken


@pytest.fixture
async def peers() -> AsyncIterator[tuple[ZenohTransport, ZenohTransport]]:
    port = free_port()
    first = await ZenohTransport.open(listen=[f"tcp/127.0.0.1:{port}"], connect=[])
    second = await ZenohTransport.open(listen=["tcp/127.0.0.1:0"],
                                       connect=[f"tcp/127.0.0.1:{port}"])
    try:
        yield first, second
    finally:
        await second.close()
        await first.close()


@pytest.mark.anyio
async def test_a_lone_session_hears_itself() -> None:
    transport = await ZenohTransport.open(listen=["tcp/127.0.0.1:0"], connect=[])
    try:
        assert transport.peer_count() == 0
        received = transport.subscribe("self/**")
        await transport.publish("self/a/b", b"one")
        await transport.publish("self/a", b"two")
        assert await take(received, 2) == [Message("self/a/b", b"one"), Message("self/a", b"two")]
    finally:
        await transport.close()


@pytest.mark.anyio
async def test_two_peers_exchange_messages_both_ways_in_order(
        peers: tuple[ZenohTransport, ZenohTransport]) -> None:
    first, second = peers
    at_first, at_second = first.subscribe("to/first"), second.subscribe("to/second")
    await until_heard(first, "to/second", at_second)
    await until_heard(second, "to/first", at_first)
    assert first.peer_count() == second.peer_count() == 1
    for index in range(300):
        await first.publish("to/second", index.to_bytes(2, "big"))
        await second.publish("to/first", index.to_bytes(2, "big"))
    for received, key in ((at_second, "to/second"), (at_first, "to/first")):
        messages = await take(received, 300)
        assert {message.key for message in messages} == {key}
        assert [int.from_bytes(m.payload, "big") for m in messages] == list(range(300))


@pytest.mark.anyio
async def test_routers_on_two_peers_address_data_to_its_owner(
        peers: tuple[ZenohTransport, ZenohTransport]) -> None:
    first, second = peers
    a = signing_router(first, namespace="ns", node_id=NodeId("node-a"))
    b = signing_router(second, namespace="ns", node_id=NodeId("node-b"))
    async with a.subscribe_with_origin(topics.DATA) as at_a:
        wanted = [DataChunk(command_id=CommandId("c"), owner_node=NodeId("node-a"),
                            sequence=index, chunk=TokenChunk(text=str(index)))
                  for index in range(20)]
        with anyio.fail_after(10):
            # Resend the first chunk until the peers see each other; duplicates are fine.
            while True:
                await b.publish(topics.DATA, wanted[0])
                with anyio.move_on_after(0.1):
                    await anext(at_a)
                    break
            for value in wanted[1:]:
                await b.publish(topics.DATA, value)
            await b.publish(topics.DATA, DataChunk(
                command_id=CommandId("c"), owner_node=NodeId("node-b"), sequence=99,
                chunk=TokenChunk(text="not for a")))
            got: list[DataChunk] = []
            async for arrival in at_a:
                assert arrival.origin == "node-b"
                value = arrival.value
                if value.sequence != 0:
                    got.append(value)
                if value.sequence == wanted[-1].sequence:
                    break
        assert got == wanted[1:]
        with anyio.move_on_after(0.2):
            stray = await anext(at_a)
            pytest.fail(f"node-a heard {stray}")


@pytest.mark.anyio
async def test_close_ends_subscriptions_and_refuses_further_use() -> None:
    transport = await ZenohTransport.open(listen=["tcp/127.0.0.1:0"], connect=[])
    received = transport.subscribe("k")
    for _ in range(1000):
        await transport.publish("k", b"x")  # samples still in flight while closing
    await transport.close()
    await transport.close()
    with anyio.fail_after(2):
        assert len([message async for message in received]) == 0
    with pytest.raises(TransportClosed):
        await transport.publish("k", b"x")
    with pytest.raises(TransportClosed):
        transport.subscribe("k")


def test_a_process_exits_promptly_after_closing(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import anyio
        from skulk.routing.zenoh_transport import ZenohTransport

        async def main() -> None:
            first = await ZenohTransport.open(listen=["tcp/127.0.0.1:{free_port()}"],
                                              connect=[])
            received = first.subscribe("k")
            await first.publish("k", b"x")
            with anyio.fail_after(5):
                await anext(received)
            await first.close()

        anyio.run(main)
        print("done")
    """)
    source = Path(__file__).resolve().parents[2]
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=20, env={"PYTHONPATH": str(source)})
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "done"


@pytest.mark.anyio
async def test_liveliness_tracks_a_peer_coming_and_going() -> None:
    port = free_port()
    first = await ZenohTransport.open(listen=[f"tcp/127.0.0.1:{port}"], connect=[])
    second = await ZenohTransport.open(listen=["tcp/127.0.0.1:0"],
                                       connect=[f"tcp/127.0.0.1:{port}"])
    try:
        a = signing_router(first, namespace="ns", node_id=NodeId("a"))
        b = signing_router(second, namespace="ns", node_id=NodeId("b"))
        a.announce_membership()
        b.announce_membership()
        seen: dict[str, bool] = {}
        async with a.membership() as changes:
            with anyio.fail_after(10):
                while seen != {"a": True, "b": True}:
                    node, alive = await anext(changes)
                    seen[node] = alive
                await second.close()
                while seen.get("b") is not False:
                    node, alive = await anext(changes)
                    seen[node] = alive
        assert seen == {"a": True, "b": False}
    finally:
        await first.close()


@pytest.mark.anyio
async def test_a_remote_publication_reaches_the_peer_only_and_is_made_only_if_heard(
        peers: tuple[ZenohTransport, ZenohTransport]) -> None:
    first, second = peers
    made: list[bytes] = []

    def payload() -> bytes:
        made.append(b"x")
        return b"remote"

    own = first.subscribe("k/remote")
    await first.publish_remote("k/remote", payload)
    assert made == []  # the peer does not listen yet: nothing is made or sent
    heard = second.subscribe("k/remote")
    await until_heard(first, "k/remote", heard)
    with anyio.move_on_after(0.3):  # drain the probes our own subscription heard
        async for _ in own:
            pass
    await first.publish_remote("k/remote", payload)
    assert [m.payload for m in await take(heard, 1)] == [b"remote"] and made == [b"x"]
    with anyio.move_on_after(0.2) as quiet:
        await anext(own)
    assert quiet.cancelled_caught  # its own session never hears a remote publication
