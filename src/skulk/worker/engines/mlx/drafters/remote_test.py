"""Remote drafting: the node's service answers n-gram drafts over the transport; the
runner's session turns every failure (no answer, late, garbage) into an empty draft and
backs off; and whatever the remote sends, greedy output equals plain decoding."""

import random

import pytest

from skulk.routing.memory import MemoryBus, MemoryTransport
from skulk.shared.types.drafting import DRAFT_SERVICE, DraftReply
from skulk.shared.types.ids import ModelId, NodeId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams, SpeculativeParams
from skulk.shared.types.wire import to_msgpack
from skulk.testing.routers import signing_router
from skulk.worker.draft_service import DraftService
from skulk.worker.engines.mlx.conftest import EngineFactory
from skulk.worker.engines.mlx.drafters.remote import (
    UNAVAILABLE_SPAN,
    RemoteDrafter,
    RemoteSession,
)


class BusClient:
    """A runner's query client over the in-memory bus."""

    def __init__(self, bus: MemoryBus) -> None:
        self.bus, self.asked = bus, 0

    def query(self, key: str, payload: bytes, timeout_seconds: float) -> bytes | None:
        self.asked += 1
        return self.bus.query(key, payload)

    def close(self) -> None:
        return None


@pytest.mark.anyio
async def test_a_node_serves_ngram_drafts_to_another_nodes_runner() -> None:
    bus = MemoryBus()
    drafting = signing_router(MemoryTransport(bus), namespace="t", node_id=NodeId("drafting-node"))
    service = DraftService()
    drafting.answer(DRAFT_SERVICE, service.handle)
    key = drafting.service_key(DRAFT_SERVICE, NodeId("drafting-node"))
    session = RemoteDrafter(BusClient(bus), key).open("req-1")
    assert session.propose([5, 6, 7, 8, 9, 1, 5, 6], 3).tokens == (7, 8, 9)
    assert session.propose([5, 6, 7, 8, 9, 1, 5, 6, 7], 2).tokens == (8, 9)
    assert service.answered == 2
    assert service.handle(b"not msgpack") is None


def test_no_answer_is_an_empty_draft_and_the_session_backs_off() -> None:
    client = BusClient(MemoryBus())  # nobody answers
    session = RemoteSession(client, "skulk/x/drafter/gone", TaskId("req"), timeout_seconds=0.05)
    drafts = [session.propose([1, 2, 1, 2], 4).tokens for _ in range(20)]
    assert drafts == [()] * 20
    # Asked at rounds 1, 2, 4, 8, 16 (1, 2, 4, 8 skipped after each failure), not 20.
    assert client.asked == 5 and session.failures == 5


class Scripted:
    """A remote that answers with whatever `answer` returns."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def query(self, key: str, payload: bytes, timeout_seconds: float) -> bytes | None:
        result = self.answer() if callable(self.answer) else self.answer
        assert result is None or isinstance(result, bytes)
        return result

    def close(self) -> None:
        return None


def test_a_garbage_answer_is_an_empty_draft() -> None:
    session = RemoteSession(Scripted(b"\x93garbage"), "k", TaskId("req"), 0.05)
    assert session.propose([1, 2, 3], 4).tokens == ()


def test_each_time_without_answers_is_one_unavailable_span() -> None:
    """Away, back, away until the request ends: two spans, the first ending at the answer
    that came back, the second at close."""
    answering = {"now": False}

    def answer() -> bytes | None:
        return to_msgpack(DraftReply(tokens=[7])) if answering["now"] else None

    session = RemoteSession(Scripted(answer), "k", TaskId("req"), 0.05)
    assert session.propose([1, 2], 2).tokens == ()  # the first outage begins
    session._skip = 0  # ask again at once instead of backing off
    answering["now"] = True
    assert session.propose([1, 2], 2).tokens == (7,)  # ... and ends
    answering["now"] = False
    assert session.propose([1, 2, 7], 2).tokens == ()  # the second begins
    spans = session.close()
    assert [s.name for s in spans] == [UNAVAILABLE_SPAN, UNAVAILABLE_SPAN]
    assert spans[0].start_us + spans[0].duration_us <= spans[1].start_us
    assert RemoteSession(Scripted(answer), "k", TaskId("req"), 0.05).close() == ()


@pytest.mark.parametrize("behaviour", ["random", "out of vocabulary", "failing"])
def test_whatever_the_remote_sends_greedy_output_is_plain(
        make_engine: EngineFactory, behaviour: str) -> None:
    rng = random.Random(0)

    def answer() -> bytes | None:
        if behaviour == "failing":
            raise ConnectionError("the drafting node went away")
        if behaviour == "out of vocabulary":
            return to_msgpack(DraftReply(tokens=[10**7, -3, 5]))
        return to_msgpack(DraftReply(tokens=[rng.randrange(300) for _ in range(6)]))

    params = GenerationParams(
        model_id=ModelId("tiny"), max_tokens=30, temperature=0.0,
        speculative=SpeculativeParams(drafter="remote", max_draft=6),
        messages=[ChatMessage(role="user", content="The quick brown fox")])
    plain = make_engine(speculation="off", prefix_cache_mb="0")
    expected = [t for c in plain.generate(params) for t in c.token_ids]
    engine = make_engine(prefix_cache_mb="0", draft_adaptive="off")
    speculator = engine.loop.speculator
    assert speculator is not None
    speculator.drafters = {"remote": RemoteDrafter(Scripted(answer), "k")}
    chunks = list(engine.generate(params))
    assert [t for c in chunks for t in c.token_ids] == expected
    usage = chunks[-1].usage
    assert usage is not None
    if behaviour == "random":
        assert usage.drafted_tokens > 0 and usage.drafter == "remote"
    else:
        assert usage.drafted_tokens == 0
