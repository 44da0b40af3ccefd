"""The runner's batching path: a real runner subprocess with the MLX engine on the tiny
model, driven through the supervisor."""

from pathlib import Path

import anyio
import pytest

from skulk.shared.types.chunks import DataChunk, TokenChunk
from skulk.shared.types.ids import InstanceId, RunnerId, TaskId
from skulk.shared.types.runners import RunnerReady
from skulk.shared.types.tasks import ChatMessage, TextGenerationTask
from skulk.testing import factories as f
from skulk.worker.engines.mlx.cpu import OPENBLAS
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.supervisor import RunnerSupervisor
from skulk.worker.runner.supervisor_test import Recorder, wait_until


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
    recorder = Recorder()
    supervisor = RunnerSupervisor(
        runner_id=RunnerId("run-1"), instance_id=InstanceId("inst-1"), engine_name="mlx",
        config=EngineConfig(model_path=str(tiny_model_dir), context_token_limit=1024,
                            n_threads=1),
        on_event=recorder.on_event, on_chunk=recorder.on_chunk)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(supervisor.run)
        await wait_until(lambda: supervisor.status is not None)
        supervisor.send(messages.LoadModel())
        supervisor.send(messages.WarmUp())
        await wait_until(lambda: isinstance(supervisor.status, RunnerReady), timeout=60)
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
            await wait_until(lambda t=task_id: len(recorder.task_statuses(t)) == 2)  # type: ignore[misc]
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
        await supervisor.shutdown(timeout=2.0)
        tasks.cancel_scope.cancel()
    assert supervisor.in_flight == {}
