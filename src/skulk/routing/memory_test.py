import anyio
import pytest

from skulk.routing.memory import MemoryBus, MemoryTransport
from skulk.routing.transport import Message, Subscription, TransportClosed


async def take(subscription: Subscription, count: int) -> list[Message]:
    taken: list[Message] = []
    with anyio.fail_after(2):
        async for message in subscription:
            taken.append(message)
            if len(taken) == count:
                break
    return taken


@pytest.mark.anyio
async def test_a_publication_reaches_every_matching_subscription_including_its_own() -> None:
    bus = MemoryBus()
    a, b, c = MemoryTransport(bus), MemoryTransport(bus), MemoryTransport(bus)
    at_a, at_b, at_c = a.subscribe("x/*"), b.subscribe("x/**"), c.subscribe("x/other")
    await a.publish("x/y", b"1")
    assert await take(at_a, 1) == [Message("x/y", b"1")]
    assert await take(at_b, 1) == [Message("x/y", b"1")]
    await b.publish("x/other", b"2")
    assert await take(at_c, 1) == [Message("x/other", b"2")]
    assert await take(at_a, 1) == [Message("x/other", b"2")]


@pytest.mark.anyio
async def test_each_publishers_messages_arrive_in_publish_order() -> None:
    bus = MemoryBus()
    a, b, reader = MemoryTransport(bus), MemoryTransport(bus), MemoryTransport(bus)
    received = reader.subscribe("k/*")

    async def publish_all(transport: MemoryTransport, name: str) -> None:
        for index in range(200):
            await transport.publish(f"k/{name}", index.to_bytes(2, "big"))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(publish_all, a, "a")
        tasks.start_soon(publish_all, b, "b")
    messages = await take(received, 400)
    for name in ("a", "b"):
        from_one = [int.from_bytes(m.payload, "big") for m in messages if m.key == f"k/{name}"]
        assert from_one == list(range(200))


@pytest.mark.anyio
async def test_a_cancelled_wait_loses_nothing() -> None:
    transport = MemoryTransport(MemoryBus())
    received = transport.subscribe("k")
    with anyio.move_on_after(0.01):
        await anext(received)
    await transport.publish("k", b"after")
    assert await take(received, 1) == [Message("k", b"after")]


@pytest.mark.anyio
async def test_closing_a_subscription_ends_it_and_detaches_it() -> None:
    bus = MemoryBus()
    transport = MemoryTransport(bus)
    kept, closed = transport.subscribe("k"), transport.subscribe("k")

    async def read_all() -> list[Message]:
        return [message async for message in closed]

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_all)  # blocked waiting when close() wakes it
        await anyio.sleep(0)
        closed.close()
    await transport.publish("k", b"x")
    assert await take(kept, 1) == [Message("k", b"x")]
    assert [message async for message in closed] == []


@pytest.mark.anyio
async def test_closing_a_transport_ends_only_its_own_subscriptions() -> None:
    bus = MemoryBus()
    leaving, staying = MemoryTransport(bus), MemoryTransport(bus)
    gone, kept = leaving.subscribe("k"), staying.subscribe("k")
    await leaving.close()
    with pytest.raises(TransportClosed):
        await leaving.publish("k", b"x")
    await staying.publish("k", b"y")
    assert [message async for message in gone] == []
    assert await take(kept, 1) == [Message("k", b"y")]


async def nothing_arrives(subscription: Subscription) -> bool:
    with anyio.move_on_after(0.05):
        await anext(subscription)
        return False
    return True


@pytest.mark.anyio
async def test_a_remote_publication_skips_its_own_transport_and_is_made_only_if_heard() -> None:
    bus = MemoryBus()
    a, b = MemoryTransport(bus), MemoryTransport(bus)
    own = a.subscribe("k")
    made: list[str] = []

    def payload() -> bytes:
        made.append("made")
        return b"sealed"

    await a.publish_remote("k", payload)
    assert made == [] and await nothing_arrives(own)  # nobody else listens: not even made
    other = b.subscribe("k")
    await a.publish_remote("k", payload)
    assert await take(other, 1) == [Message("k", b"sealed")] and made == ["made"]
    assert await nothing_arrives(own)
