import anyio
import pytest

from skulk.routing import topics
from skulk.routing.memory import MemoryBus, MemoryTransport
from skulk.routing.router import Router, namespace_fingerprint
from skulk.shared.types.chunks import DataChunk, TokenChunk
from skulk.shared.types.events import IndexedEvent, TaskDeleted
from skulk.shared.types.ids import CommandId, NodeId, SessionId, TaskId


def event(index: int) -> IndexedEvent:
    return IndexedEvent(index=index, session=SessionId("s"),
                        event=TaskDeleted(task_id=TaskId("t")))


def chunk(owner: str, sequence: int = 0) -> DataChunk:
    return DataChunk(command_id=CommandId("c"), owner_node=NodeId(owner), sequence=sequence,
                     chunk=TokenChunk(text="x"))


def router(bus: MemoryBus, node: str, namespace: str = "ns") -> Router:
    return Router(MemoryTransport(bus), namespace=namespace, node_id=NodeId(node))


async def take(values: object, count: int) -> list[object]:
    taken = []
    with anyio.fail_after(2):
        async for value in values:  # type: ignore[attr-defined]
            taken.append(value)
            if len(taken) == count:
                break
    return taken


@pytest.mark.anyio
async def test_every_node_gets_broadcasts_in_publish_order() -> None:
    bus = MemoryBus()
    a, b = router(bus, "a"), router(bus, "b")
    async with a.subscribe(topics.GLOBAL_EVENTS) as at_a, \
            b.subscribe(topics.GLOBAL_EVENTS) as at_b:
        for index in range(5):
            await a.publish(topics.GLOBAL_EVENTS, event(index))
        assert [e.index for e in await take(at_a, 5)] == list(range(5))  # type: ignore[attr-defined]
        assert [e.index for e in await take(at_b, 5)] == list(range(5))  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_data_reaches_only_its_owner() -> None:
    bus = MemoryBus()
    a, b = router(bus, "a"), router(bus, "b")
    async with a.subscribe(topics.DATA) as at_a, b.subscribe(topics.DATA) as at_b:
        await b.publish(topics.DATA, chunk("a", 0))
        await a.publish(topics.DATA, chunk("b", 1))
        [got_a] = await take(at_a, 1)
        [got_b] = await take(at_b, 1)
        assert (got_a.sequence, got_b.sequence) == (0, 1)  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_garbage_is_dropped_and_the_next_message_still_arrives() -> None:
    bus = MemoryBus()
    transport = MemoryTransport(bus)
    a = Router(transport, namespace="ns", node_id=NodeId("a"))
    async with a.subscribe(topics.GLOBAL_EVENTS) as received:
        await transport.publish(a.key(topics.GLOBAL_EVENTS), b"\xc1 garbage")
        await transport.publish(a.key(topics.GLOBAL_EVENTS), b"\x93\x01\x02\x03")
        await a.publish(topics.GLOBAL_EVENTS, event(7))
        [got] = await take(received, 1)
        assert got.index == 7  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_namespaces_do_not_see_each_other() -> None:
    bus = MemoryBus()
    a, b = router(bus, "a", "one"), router(bus, "b", "two")
    async with b.subscribe(topics.GLOBAL_EVENTS) as at_b:
        await a.publish(topics.GLOBAL_EVENTS, event(0))
        await b.publish(topics.GLOBAL_EVENTS, event(1))
        [got] = await take(at_b, 1)
        assert got.index == 1  # type: ignore[attr-defined]
    assert namespace_fingerprint("one") not in ("one", namespace_fingerprint("two"))


@pytest.mark.anyio
async def test_every_topic_round_trips() -> None:
    from skulk.shared.types.wire_test import wire_values

    bus = MemoryBus()
    a = router(bus, "a")
    for topic in topics.ALL_TOPICS:
        value = next(v for v in wire_values() if isinstance(v, topic.model))
        if topic.addressed:
            value = chunk("a")
        async with a.subscribe(topic) as received:
            await a.publish(topic, value)
            assert await take(received, 1) == [value]
