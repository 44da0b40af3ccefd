"""The MLX engine on a tiny random-weight Llama: streaming, limits, sampling, batching,
cancellation, the prefix cache and refusals."""

from collections import defaultdict

import pytest

from skulk.shared.types.chunks import ErrorChunk, TokenChunk
from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.worker.engines.mlx.conftest import EngineFactory
from skulk.worker.engines.mlx.engine import MlxEngine
from skulk.worker.engines.protocol import (
    ContextOverflow,
    EngineEvent,
    InvalidRequest,
    TaskDone,
    TaskJoined,
    TaskOutput,
)


def params(text: str, **update: object) -> GenerationParams:
    base = GenerationParams(model_id=ModelId("tiny"), max_tokens=12, temperature=0.0,
                            messages=[ChatMessage(role="user", content=text)])
    return base.model_copy(update=update)


def tokens_of(chunks: list[TokenChunk]) -> list[int]:
    return [t for c in chunks for t in c.token_ids]


def run_batch(engine: MlxEngine, requests: dict[str, GenerationParams],
              cancel_after: dict[str, int] | None = None,
              submit_at: dict[str, int] | None = None) -> dict[str, list[EngineEvent]]:
    """Drive the batching interface; `submit_at`/`cancel_after` are in steps. The largest
    batch seen is under the key "largest batch" (one event per row)."""
    events: dict[str, list[EngineEvent]] = defaultdict(list)
    largest = 0
    submit_at = submit_at or {}
    step = 0
    while step == 0 or engine.has_work or any(s >= step for s in submit_at.values()):
        for task_id, request in requests.items():
            if submit_at.get(task_id, 0) == step:
                engine.submit(TaskId(task_id), request)
        for task_id, after in (cancel_after or {}).items():
            if after == step:
                engine.cancel(TaskId(task_id))
        for event in engine.step():
            events[event.task_id].append(event)
        largest = max(largest, engine.loop.batch_size)
        step += 1
        assert step < 2000, "the engine never finished"
    events["largest batch"] = [TaskJoined(TaskId("")) for _ in range(largest)]
    return events


def chunks_in(events: list[EngineEvent]) -> list[TokenChunk]:
    return [e.chunk for e in events if isinstance(e, TaskOutput)
            and isinstance(e.chunk, TokenChunk)]


def done(events: list[EngineEvent]) -> TaskDone:
    [end] = [e for e in events if isinstance(e, TaskDone)]
    return end


def test_streams_chunks_with_usage_and_stops_at_max_tokens(make_engine: EngineFactory) -> None:
    engine = make_engine()
    chunks = list(engine.generate(params("Hello there", max_tokens=9)))
    final = chunks[-1]
    assert final.finish_reason == "length" and all(c.finish_reason is None for c in chunks[:-1])
    assert final.usage is not None and final.usage.completion_tokens == 9
    assert final.usage.prompt_tokens == len(_prompt(engine, "Hello there"))
    assert len(tokens_of(chunks)) == 9
    assert "".join(c.text for c in chunks) == _decode(engine, tokens_of(chunks))


def _prompt(engine: MlxEngine, text: str) -> list[int]:
    from skulk.worker.engines.mlx.requests import prompt_tokens
    assert engine._tokenizer is not None
    return prompt_tokens(params(text), engine._tokenizer)


def _decode(engine: MlxEngine, tokens: list[int]) -> str:
    assert engine._tokenizer is not None
    return engine._tokenizer.decode(tokens)


def test_stop_sequence_cuts_the_text_and_is_reported(make_engine: EngineFactory) -> None:
    engine = make_engine()
    sampled = params("Tell me a story", max_tokens=40, temperature=1.0, seed=7)
    full = "".join(c.text for c in engine.generate(sampled))
    assert len(full) > 12
    stop = full[8:11]
    chunks = list(engine.generate(sampled.model_copy(update={"stop": [stop]})))
    text = "".join(c.text for c in chunks)
    assert text == full[: full.index(stop)]
    assert chunks[-1].finish_reason == "stop" and chunks[-1].stop_sequence == stop


def test_seeded_sampling_is_reproducible_and_seed_dependent(make_engine: EngineFactory) -> None:
    engine = make_engine(prefix_cache_mb="0")
    sampled = params("Once upon a time", max_tokens=24, temperature=1.0, seed=11)
    first = tokens_of(list(engine.generate(sampled)))
    again = tokens_of(list(engine.generate(sampled)))
    other = tokens_of(list(engine.generate(sampled.model_copy(update={"seed": 12}))))
    assert first == again
    assert first != other


PROMPTS = {"a": "The quick brown fox", "b": "Hello! How are you today?",
           "c": "Numbers like 12345", "d": "Café, naïve, über and a much longer prompt "
           "that needs more than one prefill chunk of the small size used here"}
EIGHT = {**PROMPTS, "e": "Skulk joins machines", "f": "user assistant system",
         "g": "Symbols: #, %, &.", "h": "東京 and こんにちは"}


@pytest.mark.parametrize("size", [4, 8])
def test_greedy_output_is_the_same_alone_and_in_a_batch(
        make_engine: EngineFactory, size: int) -> None:
    prompts = dict(list(EIGHT.items())[:size])
    alone = {}
    for task_id, text in prompts.items():
        engine = make_engine(prefix_cache_mb="0", prefill_chunk="16")
        alone[task_id] = tokens_of(list(engine.generate(params(text, max_tokens=16))))
    engine = make_engine(prefix_cache_mb="0", prefill_chunk="16")
    requests = {t: params(text, max_tokens=16) for t, text in prompts.items()}
    # Some join a batch already decoding; the long one prefills over several steps.
    submit_at = {t: 0 if n < 2 else n for n, t in enumerate(prompts)}
    together = run_batch(engine, requests, submit_at=submit_at)
    assert len(together["largest batch"]) == size
    for task_id in prompts:
        assert done(together[task_id]).status == "complete"
        assert tokens_of(chunks_in(together[task_id])) == alone[task_id], task_id


def test_seeded_sampling_is_the_same_alone_and_in_a_batch(make_engine: EngineFactory) -> None:
    sampled = {t: params(text, max_tokens=10, temperature=0.8, seed=5)
               for t, text in PROMPTS.items()}
    alone = {t: tokens_of(list(make_engine(prefix_cache_mb="0").generate(p)))
             for t, p in sampled.items()}
    together = run_batch(make_engine(prefix_cache_mb="0"), sampled)
    assert len(together.pop("largest batch")) == 4
    assert {t: tokens_of(chunks_in(e)) for t, e in together.items()} == alone


def test_a_cancelled_request_leaves_and_the_others_continue(make_engine: EngineFactory) -> None:
    alone = make_engine(prefix_cache_mb="0")
    solo = tokens_of(list(alone.generate(params("Hello", max_tokens=30))))
    engine = make_engine(prefix_cache_mb="0")
    events = run_batch(engine, {"keep": params("Hello", max_tokens=30),
                                "drop": params("Skulk joins", max_tokens=30)},
                       cancel_after={"drop": 4})
    assert len(events["largest batch"]) == 2
    assert done(events["drop"]).status == "cancelled"
    assert len(tokens_of(chunks_in(events["drop"]))) < 30
    assert all(c.finish_reason is None for c in chunks_in(events["drop"]))
    assert done(events["keep"]).status == "complete"
    assert tokens_of(chunks_in(events["keep"])) == solo


def test_closing_the_stream_cancels_between_tokens(make_engine: EngineFactory) -> None:
    engine = make_engine()
    stream = engine.generate(params("Hello", max_tokens=200))
    next(stream)
    stream.close()  # type: ignore[attr-defined]  # closable, though typed as an Iterator
    while engine.has_work:
        engine.step()
    assert not engine.loop.has_work


def test_batching_off_runs_requests_one_at_a_time(make_engine: EngineFactory) -> None:
    engine = make_engine(batching="off")
    order: list[str] = []
    for task_id in ("x", "y"):
        engine.submit(TaskId(task_id), params("Hello", max_tokens=5))
    while engine.has_work:
        for event in engine.step():
            if isinstance(event, TaskJoined | TaskDone):
                order.append(f"{type(event).__name__}:{event.task_id}")
    assert order == ["TaskJoined:x", "TaskDone:x", "TaskJoined:y", "TaskDone:y"]


def test_a_follow_up_turn_prefills_only_the_new_tokens(make_engine: EngineFactory) -> None:
    engine = make_engine(prefill_chunk="16")
    first = params("Hello! How are you today?", max_tokens=12)
    reply = "".join(c.text for c in engine.generate(first))
    follow = first.model_copy(update={"messages": [
        *first.messages, ChatMessage(role="assistant", content=reply),
        ChatMessage(role="user", content="And tomorrow?")]})
    before = engine.loop.prefilled_tokens
    warm = list(engine.generate(follow))
    prefilled = engine.loop.prefilled_tokens - before
    prompt = _prompt_of(engine, follow)
    usage = warm[-1].usage
    assert usage is not None and usage.cached_tokens >= len(_prompt_of(engine, first))
    assert prefilled == len(prompt) - 1 - usage.cached_tokens
    assert engine.loop.prefix_cache.hits >= 1
    cold = list(make_engine(prefix_cache_mb="0", prefill_chunk="16").generate(follow))
    assert tokens_of(warm) == tokens_of(cold)
    assert cold[-1].usage is not None and cold[-1].usage.cached_tokens == 0


def _prompt_of(engine: MlxEngine, request: GenerationParams) -> list[int]:
    from skulk.worker.engines.mlx.requests import prompt_tokens
    assert engine._tokenizer is not None
    return prompt_tokens(request, engine._tokenizer)


def test_a_prompt_over_the_context_is_refused(make_engine: EngineFactory) -> None:
    engine = make_engine(limit=32)
    long = params("The quick brown fox jumps over the lazy dog. " * 4)
    with pytest.raises(ContextOverflow):
        engine.generate(long)
    events = run_batch(engine, {"long": long, "short": params("Hi", max_tokens=40)})
    [error] = [e.chunk for e in events["long"] if isinstance(e, TaskOutput)]
    assert isinstance(error, ErrorChunk) and error.error_kind == "context_length_exceeded"
    assert done(events["long"]).status == "failed"
    short = chunks_in(events["short"])
    assert done(events["short"]).status == "complete"
    assert short[-1].usage is not None
    assert short[-1].usage.prompt_tokens + short[-1].usage.completion_tokens <= 32


@pytest.mark.parametrize("update", [{"output": "json", "json_schema": "{"},
                                    {"output": "json", "json_schema": '{"type": "strin"}'}])
def test_a_schema_that_cannot_be_enforced_is_refused_saying_why(
        make_engine: EngineFactory, update: dict[str, object]) -> None:
    engine = make_engine()
    with pytest.raises(InvalidRequest, match="schema"):
        engine.generate(params("Hi", **update))
    events = run_batch(engine, {"t": params("Hi", **update)})
    [error] = [e.chunk for e in events["t"] if isinstance(e, TaskOutput)]
    assert isinstance(error, ErrorChunk) and error.error_kind == "invalid_request"


def test_the_same_prompt_again_reuses_all_but_its_last_token(make_engine: EngineFactory) -> None:
    engine = make_engine()
    request = params("Numbers like 12345", max_tokens=8)
    first = list(engine.generate(request))
    before = engine.loop.prefilled_tokens
    again = list(engine.generate(request))
    assert again[-1].usage is not None
    assert again[-1].usage.cached_tokens == len(_prompt(engine, "Numbers like 12345")) - 1
    assert engine.loop.prefilled_tokens == before
    assert tokens_of(again) == tokens_of(first)
