"""One request alone over a real engine's batch (the echo test engine): its chunks, the
other requests' events kept for the engine's next step, a failure raised, and an early
close cancelling it."""

import pytest

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.testing.echo.description import EchoOptions
from skulk.testing.echo.engine import EchoEngine
from skulk.worker.engines.protocol import EngineConfig, TaskDone, TaskOutput
from skulk.worker.engines.request_alone import RequestAlone, RequestFailed


def params(text: str) -> GenerationParams:
    return GenerationParams(model_id=ModelId("m"),
                            messages=[ChatMessage(role="user", content=text)])


def engine(max_batch: int = 2, limit: int = 100) -> tuple[EchoEngine, RequestAlone]:
    echo = EchoEngine(EngineConfig(model_path="", context_token_limit=limit,
                                   options=EchoOptions(max_batch=max_batch)))
    echo.load()
    return echo, RequestAlone(echo.step, echo.cancel)


def test_the_request_streams_and_the_others_events_wait_for_the_next_step() -> None:
    echo, alone = engine()
    echo.submit(TaskId("other"), params("x y"))
    mine = alone.new_task_id()
    echo.submit(mine, params("one two three"))
    text = "".join(chunk.text for chunk in alone.stream(mine))
    assert text == "one two three"
    assert alone.last_done == TaskDone(mine, "complete")
    held = alone.take_held()
    assert [e.task_id for e in held] == [TaskId("other")] * len(held)
    assert "".join(e.chunk.text for e in held
                   if isinstance(e, TaskOutput) and isinstance(e.chunk, TokenChunk)) == "x y"
    assert not alone.holding and alone.take_held() == []


def test_a_failed_request_raises_with_its_message() -> None:
    echo, alone = engine(limit=2)
    mine = alone.new_task_id()
    echo.submit(mine, params("far too many words"))
    with pytest.raises(RequestFailed, match="admits at most 2 tokens"):
        list(alone.stream(mine))


def test_closing_early_cancels_the_request() -> None:
    echo, alone = engine()
    mine = alone.new_task_id()
    echo.submit(mine, params("a b c d e f"))
    stream = alone.stream(mine)
    next(stream)
    stream.close()  # type: ignore[attr-defined]  # closable, though typed as an Iterator
    assert echo.step() == [TaskDone(mine, "cancelled")]
    assert not echo.has_work
