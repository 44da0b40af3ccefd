from collections.abc import AsyncIterator
from typing import Any, TypeVar

import anyio
import pytest
from pydantic import BaseModel

from skulk.routing import topics
from skulk.routing.memory import MemoryBus, MemoryTransport
from skulk.routing.router import Router, namespace_fingerprint
from skulk.shared.types.chunks import DataChunk, ErrorChunk, TokenChunk
from skulk.shared.types.commands import CancelTask, CommandEnvelope
from skulk.shared.types.election import ElectionMessage, StateSyncMessage
from skulk.shared.types.events import (
    IndexedBatch,
    IndexedEvent,
    LocalEvent,
    LocalEventBatch,
    TaskDeleted,
)
from skulk.shared.types.ids import CommandId, NodeId, SessionId, TaskId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.shared.types.traces import RankSpans, Span
from skulk.shared.types.wire import to_msgpack
from skulk.testing.routers import signing_router

T = TypeVar("T", bound=BaseModel)
U = TypeVar("U")


def event(index: int, master: str = "a") -> IndexedBatch:
    """A batch of one indexed event, as the master publishes them."""
    return IndexedBatch(master_node=NodeId(master), events=[IndexedEvent(
        index=index, session=SessionId("s"), master_node=NodeId(master),
        event=TaskDeleted(task_id=TaskId("t")))])


def chunk(owner: str, sequence: int = 0) -> DataChunk:
    return DataChunk(command_id=CommandId("c"), owner_node=NodeId(owner), sequence=sequence,
                     chunk=TokenChunk(text="x"))


SAMPLES: dict[str, BaseModel] = {
    "commands": CommandEnvelope(origin=NodeId("a"), command=CancelTask(
        command_id=CommandId("c1"), target_command_id=CommandId("c0"))),
    "local_events": LocalEventBatch(origin=NodeId("a"), events=[LocalEvent(
        origin=NodeId("a"), epoch="e", origin_seq=1, event=TaskDeleted(task_id=TaskId("t")))]),
    "global_events": event(4),
    "election": ElectionMessage(node_id=NodeId("a"), clock=2, seniority=1, commands_seen=9),
    "state_sync": StateSyncMessage(kind="replay_request", node_id=NodeId("a"), from_index=3),
    "telemetry": NodeTelemetry(node_id=NodeId("a"), stamp=1.5, memory_total_bytes=8,
                               memory_available_bytes=4, cpu_count=2, backends=["cpu"],
                               has_worker=True),
    "data": DataChunk(command_id=CommandId("c"), owner_node=NodeId("a"), sequence=3,
                      chunk=ErrorChunk(error_kind="timeout", message="m")),
    "trace_spans": RankSpans(command_id=CommandId("c"), owner_node=NodeId("a"), spans=[
        Span(name="runner.work", node_id=NodeId("b"), rank=1, start_us=5, duration_us=7)]),
}


def router(bus: MemoryBus, node: str, namespace: str = "ns") -> Router:
    return signing_router(MemoryTransport(bus), namespace=namespace, node_id=NodeId(node))


async def take(values: AsyncIterator[U], count: int) -> list[U]:
    taken: list[U] = []
    with anyio.fail_after(2):
        async for value in values:
            taken.append(value)
            if len(taken) == count:
                break
    return taken


async def nothing_arrives(values: AsyncIterator[object]) -> bool:
    with anyio.move_on_after(0.05):
        await anext(values)
        return False
    return True


@pytest.mark.anyio
@pytest.mark.parametrize("topic", topics.ALL_TOPICS, ids=lambda topic: topic.name)
async def test_every_topic_round_trips(topic: topics.TypedTopic[Any]) -> None:
    bus = MemoryBus()
    value = SAMPLES[topic.name]
    sender = "b" if topic.origin_of is None else topic.origin_of(value)
    a, b = router(bus, "a"), router(bus, sender)
    async with a.subscribe_with_origin(topic) as received:
        await b.publish(topic, value)
        with anyio.fail_after(2):
            arrival = await anext(received)
        assert (arrival.origin, arrival.value) == (sender, value)


def test_keys_carry_the_fingerprint_not_the_namespace() -> None:
    a = router(MemoryBus(), "node-a", "secret cluster")
    fingerprint = namespace_fingerprint("secret cluster")
    assert len(fingerprint) == 16 and int(fingerprint, 16) >= 0
    assert a.key(topics.COMMANDS) == f"skulk/{fingerprint}/commands"
    assert a.key(topics.DATA, NodeId("node-b")) == f"skulk/{fingerprint}/data/node-b"
    with pytest.raises(ValueError):
        a.key(topics.DATA)
    with pytest.raises(ValueError):
        a.key(topics.COMMANDS, NodeId("node-b"))
    with pytest.raises(ValueError):
        a.key(topics.DATA, NodeId("node/*"))


@pytest.mark.anyio
async def test_every_node_gets_broadcasts_in_publish_order() -> None:
    bus = MemoryBus()
    a, b = router(bus, "a"), router(bus, "b")
    async with a.subscribe(topics.GLOBAL_EVENTS) as at_a, \
            b.subscribe(topics.GLOBAL_EVENTS) as at_b:
        for index in range(5):
            await a.publish(topics.GLOBAL_EVENTS, event(index))
        assert [e.events[0].index for e in await take(at_a, 5)] == list(range(5))
        assert [e.events[0].index for e in await take(at_b, 5)] == list(range(5))


@pytest.mark.anyio
async def test_data_reaches_only_its_owner() -> None:
    bus = MemoryBus()
    a, b = router(bus, "a"), router(bus, "b")
    async with a.subscribe_with_origin(topics.DATA) as at_a, \
            b.subscribe_with_origin(topics.DATA) as at_b:
        await b.publish(topics.DATA, chunk("a", 0))
        await a.publish(topics.DATA, chunk("b", 1))
        await a.publish(topics.DATA, chunk("a", 2))
        assert [(got.origin, got.value.sequence) for got in await take(at_a, 2)] == [
            ("b", 0), ("a", 2)]
        assert [got.value.sequence for got in await take(at_b, 1)] == [1]
        assert await nothing_arrives(at_a)
        assert await nothing_arrives(at_b)


@pytest.mark.anyio
async def test_garbage_is_dropped_and_the_next_message_still_arrives() -> None:
    bus = MemoryBus()
    transport = MemoryTransport(bus)
    a = signing_router(transport, namespace="ns", node_id=NodeId("a"))
    key = a.key(topics.GLOBAL_EVENTS)
    async with a.subscribe(topics.GLOBAL_EVENTS) as received:
        await transport.publish(key, b"\xc1 not msgpack")
        await transport.publish(key, b"\x93\x01\x02\x03")  # msgpack, wrong shape
        await transport.publish(key, to_msgpack(chunk("a")))  # another topic's type
        await a.publish(topics.GLOBAL_EVENTS, event(7))
        assert [got.events[0].index for got in await take(received, 1)] == [7]


@pytest.mark.anyio
async def test_a_dropped_payload_is_logged_by_size_without_its_content() -> None:
    from loguru import logger

    lines: list[str] = []
    handler = logger.add(lines.append, level="WARNING", format="{message}")
    try:
        transport = MemoryTransport(MemoryBus())
        a = signing_router(transport, namespace="ns", node_id=NodeId("a"))
        async with a.subscribe(topics.TELEMETRY) as received:
            await transport.publish(a.key(topics.TELEMETRY), b"\x81\xa6secret\x01")
            with anyio.move_on_after(0.05):
                await anext(received)
    finally:
        logger.remove(handler)
    assert len(lines) == 1
    assert "telemetry" in lines[0] and "9 bytes" in lines[0]
    assert "secret" not in lines[0]


@pytest.mark.anyio
async def test_namespaces_do_not_see_each_other() -> None:
    bus = MemoryBus()
    a, b = router(bus, "a", "one"), router(bus, "b", "two")
    async with b.subscribe(topics.GLOBAL_EVENTS) as at_b, \
            a.subscribe(topics.GLOBAL_EVENTS) as at_a:
        await a.publish(topics.GLOBAL_EVENTS, event(0))
        await b.publish(topics.GLOBAL_EVENTS, event(1, master="b"))
        assert [got.events[0].index for got in await take(at_b, 1)] == [1]
        assert [got.events[0].index for got in await take(at_a, 1)] == [0]
        assert await nothing_arrives(at_a)
        assert await nothing_arrives(at_b)


@pytest.mark.anyio
async def test_a_subscription_survives_a_cancelled_wait() -> None:
    bus = MemoryBus()
    a = router(bus, "a")
    async with a.subscribe(topics.ELECTION) as received:
        assert await nothing_arrives(received)
        value = ElectionMessage(node_id=NodeId("a"), clock=1, seniority=0, commands_seen=0)
        await a.publish(topics.ELECTION, value)
        assert await take(received, 1) == [value]


@pytest.mark.anyio
async def test_what_is_already_there_is_taken_without_waiting_and_garbage_skipped() -> None:
    """`receive_nowait` (the master's way to take a burst): verified values in order, the
    dropped ones counted, `WouldBlock` when none is there, and the end left for iteration."""
    bus = MemoryBus()
    a, b = router(bus, "a"), router(bus, "b")
    key = a.key(topics.GLOBAL_EVENTS)
    async with a.subscribe(topics.GLOBAL_EVENTS) as received:
        with pytest.raises(anyio.WouldBlock):
            received.receive_nowait()
        await b.publish(topics.GLOBAL_EVENTS, event(1, "b"))
        await MemoryTransport(bus).publish(key, b"\xc1 not msgpack")
        await b.publish(topics.GLOBAL_EVENTS, event(2, "b"))
        assert received.receive_nowait().events[0].index == 1
        assert received.receive_nowait().events[0].index == 2
        assert a.dropped.counts[("global_events", "not_an_envelope")] == 1
        with pytest.raises(anyio.WouldBlock):
            received.receive_nowait()
        received.close()
        with pytest.raises(anyio.WouldBlock):
            received.receive_nowait()
        assert [value async for value in received] == []


@pytest.mark.anyio
async def test_leaving_the_block_ends_the_subscription() -> None:
    a = router(MemoryBus(), "a")
    async with a.subscribe(topics.GLOBAL_EVENTS) as received:
        pass
    await a.publish(topics.GLOBAL_EVENTS, event(0))
    assert [value async for value in received] == []


@pytest.mark.anyio
async def test_a_subscription_can_be_held_open_by_a_task() -> None:
    bus = MemoryBus()
    a = router(bus, "a")
    got: list[int] = []

    async def listen(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with a.subscribe(topics.GLOBAL_EVENTS) as received:
            task_status.started()
            async for value in received:
                got.append(value.events[0].index)

    async with anyio.create_task_group() as tasks:
        await tasks.start(listen)
        await a.publish(topics.GLOBAL_EVENTS, event(1))
        await anyio.wait_all_tasks_blocked()
        tasks.cancel_scope.cancel()
    assert got == [1]


@pytest.mark.anyio
async def test_membership_sees_current_members_then_arrivals_and_departures() -> None:
    bus = MemoryBus()
    a_transport, b_transport = MemoryTransport(bus), MemoryTransport(bus)
    a = signing_router(a_transport, namespace="ns", node_id=NodeId("a"))
    b = signing_router(b_transport, namespace="ns", node_id=NodeId("b"))
    signing_router(MemoryTransport(bus), namespace="elsewhere", node_id=NodeId("c")
           ).announce_membership()
    a.announce_membership()
    async with a.membership() as changes:
        with anyio.fail_after(2):
            assert await anext(changes) == ("a", True)
            b.announce_membership()
            assert await anext(changes) == ("b", True)
            await b_transport.close()
            assert await anext(changes) == ("b", False)


@pytest.mark.anyio
async def test_a_value_claiming_another_origin_is_dropped_and_counted() -> None:
    bus = MemoryBus()
    a, mallory = router(bus, "a"), router(bus, "mallory")
    async with a.subscribe(topics.GLOBAL_EVENTS) as received:
        await mallory.publish(topics.GLOBAL_EVENTS, event(3, master="a"))
        await mallory.publish(topics.ELECTION, ElectionMessage(
            node_id=NodeId("a"), clock=9, seniority=0, commands_seen=0))
        await a.publish(topics.GLOBAL_EVENTS, event(4))
        assert [got.events[0].index for got in await take(received, 1)] == [4]
    assert a.dropped.counts[("global_events", "forged_origin")] == 1


@pytest.mark.anyio
async def test_unsigned_tampered_and_impersonating_messages_are_dropped() -> None:
    bus = MemoryBus()
    transport = MemoryTransport(bus)
    a, b = signing_router(transport, namespace="ns", node_id=NodeId("a")), router(bus, "b")
    impostor = router(bus, "b")  # the same node id under another key
    key = a.key(topics.GLOBAL_EVENTS)
    async with a.subscribe(topics.GLOBAL_EVENTS) as received, \
            a.subscribe(topics.COMMANDS) as commands:
        await b.publish(topics.GLOBAL_EVENTS, event(1, master="b"))
        assert [got.events[0].index for got in await take(received, 1)] == [1]
        await transport.publish(key, to_msgpack(event(2, master="b")))  # not an envelope
        payload = to_msgpack(event(3, master="b"))
        sealed = b._signer.seal(key, payload)
        # Tampered: the signed payload's last byte changed (a byte picked by its value could
        # land in the sender's id or credential instead, and be dropped for that).
        at = sealed.index(payload) + len(payload) - 1
        await transport.publish(key, sealed[:at] + bytes([sealed[at] ^ 1]) + sealed[at + 1:])
        await transport.publish(a.key(topics.COMMANDS), sealed)  # replayed on another key
        await impostor.publish(topics.GLOBAL_EVENTS, event(4, master="b"))
        assert await nothing_arrives(received)
        assert await nothing_arrives(commands)
    assert a.dropped.counts[("commands", "bad_signature")] == 1
    assert a.dropped.counts[("global_events", "not_an_envelope")] == 1
    assert a.dropped.counts[("global_events", "bad_signature")] == 1
    assert a.dropped.counts[("global_events", "credential_of_another_node")] == 1
