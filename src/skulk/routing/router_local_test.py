"""The router's local delivery: its own subscriptions get its values in-process, in order,
unsealed; other nodes still get them sealed; what opening would refuse is refused."""

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

from skulk.routing import topics
from skulk.routing.memory import MemoryBus, MemoryTransport
from skulk.routing.router import Router
from skulk.shared.types.events import IndexedBatch, IndexedEvent, TaskDeleted
from skulk.shared.types.ids import NodeId, SessionId, TaskId
from skulk.trust.envelope import MessageSigner
from skulk.trust.setup import ephemeral_trust


def event(index: int, master: str = "a") -> IndexedBatch:
    """A batch of one indexed event, as the master publishes them."""
    return IndexedBatch(master_node=NodeId(master), events=[IndexedEvent(
        index=index, session=SessionId("s"), master_node=NodeId(master),
        event=TaskDeleted(task_id=TaskId("t")))])


def router(bus: MemoryBus, node: str, *, local_delivery: bool = True) -> Router:
    trust = ephemeral_trust(NodeId(node))
    return Router(MemoryTransport(bus), namespace="ns", signer=trust.signer,
                  verifier=trust.verifier, local_delivery=local_delivery)


@contextmanager
def counting_seals(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    sealed: Counter[str] = Counter()
    seal = MessageSigner.seal

    def counted(self: MessageSigner, key: str, payload: bytes) -> bytes:
        sealed[self.node_id] += 1
        return seal(self, key, payload)

    monkeypatch.setattr(MessageSigner, "seal", counted)
    yield sealed


@pytest.mark.anyio
async def test_own_values_are_handed_over_in_order_and_never_sealed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with counting_seals(monkeypatch) as sealed:
        a = router(MemoryBus(), "a")
        async with a.subscribe_with_origin(topics.GLOBAL_EVENTS) as received:
            values = [event(index) for index in range(5)]
            for value in values:
                await a.publish(topics.GLOBAL_EVENTS, value)
            with anyio.fail_after(2):
                arrivals = [await anext(received) for _ in values]
    assert [arrival.value for arrival in arrivals] == values
    assert all(arrival.value is value for arrival, value in zip(arrivals, values, strict=True))
    assert {arrival.origin for arrival in arrivals} == {"a"}
    assert sealed["a"] == 0  # no other node listened


@pytest.mark.anyio
async def test_other_nodes_still_get_them_sealed_and_verified(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with counting_seals(monkeypatch) as sealed:
        bus = MemoryBus()
        a, b = router(bus, "a"), router(bus, "b")
        async with a.subscribe(topics.GLOBAL_EVENTS) as at_a, \
                b.subscribe_with_origin(topics.GLOBAL_EVENTS) as at_b:
            for index in range(3):
                await a.publish(topics.GLOBAL_EVENTS, event(index))
            with anyio.fail_after(2):
                own = [(await anext(at_a)).events[0].index for _ in range(3)]
                heard = [await anext(at_b) for _ in range(3)]
    assert own == [0, 1, 2]
    assert [(got.origin, got.value.events[0].index) for got in heard] == [
        ("a", 0), ("a", 1), ("a", 2)]
    assert sealed["a"] == 3  # once each, for b


@pytest.mark.anyio
async def test_a_value_naming_another_origin_is_refused_as_over_the_wire() -> None:
    a = router(MemoryBus(), "a")
    async with a.subscribe(topics.GLOBAL_EVENTS) as received:
        await a.publish(topics.GLOBAL_EVENTS, event(0, master="b"))  # claims b indexed it
        await a.publish(topics.GLOBAL_EVENTS, event(1))
        with anyio.fail_after(2):
            assert (await anext(received)).events[0].index == 1
    assert a.dropped.counts["global_events", "forged_origin"] == 1


@pytest.mark.anyio
async def test_a_closed_subscription_gets_nothing_more_and_is_forgotten() -> None:
    a = router(MemoryBus(), "a")
    async with a.subscribe(topics.GLOBAL_EVENTS) as received:
        pass
    await a.publish(topics.GLOBAL_EVENTS, event(0))
    assert [value async for value in received] == []
    assert a._local == {}


@pytest.mark.anyio
async def test_with_local_delivery_off_own_values_round_trip_sealed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with counting_seals(monkeypatch) as sealed:
        a = router(MemoryBus(), "a", local_delivery=False)
        async with a.subscribe(topics.GLOBAL_EVENTS) as received:
            await a.publish(topics.GLOBAL_EVENTS, event(0))
            with anyio.fail_after(2):
                arrival = await anext(received)
    assert arrival == event(0) and arrival is not event(0)
    assert sealed["a"] == 1
