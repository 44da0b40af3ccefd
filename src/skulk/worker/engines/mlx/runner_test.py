"""The runner's batching path: a real runner subprocess with the MLX engine on the tiny
model, driven through the supervisor."""

from functools import partial
from pathlib import Path

import anyio
import pytest

from skulk.shared.types.chunks import DataChunk, TokenChunk
from skulk.shared.types.ids import TaskId
from skulk.shared.types.runners import RunnerReady
from skulk.shared.types.tasks import ChatMessage, TextGenerationTask
from skulk.testing import factories as f
from skulk.testing.runners import supervised_runner, wait_until
from skulk.worker.engines.mlx.cpu import OPENBLAS
from skulk.worker.engines.mlx.description import MLX
from skulk.worker.engines.protocol import EngineConfig


def task(task_id: str, text: str, max_tokens: int) -> TextGenerationTask:
    params = f.params(text).model_copy(update={
        "max_tokens": max_tokens, "temperature": 0.0,
        "messages": [ChatMessage(role="user", content=text)]})
    return f.task(task_id, command_id=f"cmd-{task_id}").model_copy(update={"params": params})


def text_of(chunks: list[DataChunk], task_id: str) -> str:
    return "".join(c.chunk.text for c in chunks
                   if c.command_id == f"cmd-{task_id}" and isinstance(c.chunk, TokenChunk))


@pytest.mark.anyio
async def test_concurrent_tasks_stream_end_once_and_one_can_be_cancelled(
        tiny_model_dir: Path) -> None:
    config = EngineConfig(model_path=str(tiny_model_dir), context_token_limit=1024,
                          n_threads=1)
    async with supervised_runner(engine=MLX, config=config, ready_timeout=60,
                                 shutdown_timeout=2.0) as (supervisor, recorder):
        if OPENBLAS.exists():
            maps = Path(f"/proc/{supervisor.pid}/maps").read_text()
            assert str(OPENBLAS.resolve().parent) in maps, "OpenBLAS was not preloaded"
        supervisor.start_task(task("solo", "Hello there", 8))
        await wait_until(lambda: "complete" in recorder.task_statuses("solo"))
        solo = text_of(recorder.chunks, "solo")
        for task_id in ("a", "b"):
            supervisor.start_task(task(task_id, "Hello there", 8))
        supervisor.start_task(task("long", "Tell me everything", 900))
        await wait_until(lambda: any(c.command_id == "cmd-long" for c in recorder.chunks))
        supervisor.cancel_task(TaskId("long"))
        for task_id in ("a", "b", "long"):
            await wait_until(partial(recorder.task_ended, task_id))
        await anyio.sleep(0.2)
        assert recorder.task_statuses("a") == recorder.task_statuses("b") == \
            ["running", "complete"]
        assert recorder.task_statuses("long") == ["running", "cancelled"]
        assert text_of(recorder.chunks, "a") == text_of(recorder.chunks, "b") == solo
        for task_id in ("a", "b"):
            sequences = [c.sequence for c in recorder.chunks if c.command_id == f"cmd-{task_id}"]
            assert sequences == list(range(len(sequences)))
            last = [c.chunk for c in recorder.chunks if c.command_id == f"cmd-{task_id}"][-1]
            assert isinstance(last, TokenChunk) and last.finish_reason == "length"
        await wait_until(lambda: isinstance(supervisor.status, RunnerReady))
    assert supervisor.in_flight == {}
