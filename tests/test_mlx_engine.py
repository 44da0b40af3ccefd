"""The MLX engine in real runner subprocesses driven by their supervisors: the real SmolLM2
(imported from the bundled GGUF) streaming, stopping, and batching four requests into the
same greedy text as each alone; and two runners splitting a tiny model over a loopback
ring, agreeing on warm-up, joins and a one-sided cancel."""

import hashlib
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import anyio
import pytest

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import InstanceId, RunnerId, TaskId
from skulk.shared.types.runners import RunnerFailed, RunnerReady
from skulk.shared.types.tasks import ChatMessage, TextGenerationTask
from skulk.testing import factories as f
from skulk.testing.ports import free_port
from skulk.testing.runners import Recorder, supervised_runner, wait_until
from skulk.testing.tiny_model import write_tiny_model
from skulk.worker.engines.mlx.cpu import OPENBLAS
from skulk.worker.engines.mlx.description import MLX
from skulk.worker.engines.mlx.engine import MlxEngine
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.supervisor import RunnerSupervisor
from tests.speculative_support import bundled_mlx_model

PROMPTS = ["Name a fruit.", "What is the capital of France?", "Say hello in Spanish.",
           "Count from one to five."]
MAX_TOKENS = 10
SECONDS = 120.0


def smollm2_dir(models_dir: Path) -> Path:
    # fp32 is the fast variant with OpenBLAS; without it the 4-bit copy is.
    return bundled_mlx_model(models_dir, q_bits=None if OPENBLAS.exists() else 4)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def runner(mlx_models: Path) -> AsyncIterator[tuple[RunnerSupervisor, Recorder]]:
    model_dir = smollm2_dir(mlx_models)
    async with supervised_runner(
            engine=MLX, runner_id=RunnerId("mlx-1"), instance_id=InstanceId("inst-mlx"),
            config=EngineConfig(model_path=str(model_dir), context_token_limit=2048,
                                n_threads=1),  # two wait on each other under load
            ready_timeout=SECONDS, shutdown_timeout=5.0) as pair:
        yield pair


def task(task_id: str, text: str, **update: object) -> TextGenerationTask:
    params = f.params(text).model_copy(update={
        "max_tokens": MAX_TOKENS, "temperature": 0.0,
        "messages": [ChatMessage(role="user", content=text)], **update})
    return f.task(task_id, command_id=f"cmd-{task_id}").model_copy(update={"params": params})


def chunks_of(recorder: Recorder, task_id: str) -> list[TokenChunk]:
    return [c.chunk for c in recorder.chunks
            if c.command_id == f"cmd-{task_id}" and isinstance(c.chunk, TokenChunk)]


async def run(supervisor: RunnerSupervisor, recorder: Recorder,
              *tasks: TextGenerationTask) -> None:
    for one in tasks:
        supervisor.start_task(one)
    def complete(task_id: TaskId) -> bool:
        return "complete" in recorder.task_statuses(task_id)

    for one in tasks:
        await wait_until(partial(complete, one.task_id), timeout=SECONDS)


@pytest.mark.anyio
async def test_streams_the_real_model_with_usage(
        runner: tuple[RunnerSupervisor, Recorder]) -> None:
    supervisor, recorder = runner
    if OPENBLAS.exists():
        assert str(OPENBLAS.resolve().parent) in Path(f"/proc/{supervisor.pid}/maps").read_text()
    await run(supervisor, recorder, task("stream", PROMPTS[0]))
    chunks = chunks_of(recorder, "stream")
    assert len(chunks) >= 3 and "".join(c.text for c in chunks).strip()
    final = chunks[-1]
    assert final.usage is not None and final.usage.prompt_tokens > 5
    assert final.usage.completion_tokens == sum(len(c.token_ids) for c in chunks) <= MAX_TOKENS
    sequences = [c.sequence for c in recorder.chunks if c.command_id == "cmd-stream"]
    assert sequences == list(range(len(sequences)))


@pytest.mark.anyio
async def test_a_stop_sequence_cuts_the_real_models_text(
        runner: tuple[RunnerSupervisor, Recorder]) -> None:
    supervisor, recorder = runner
    await run(supervisor, recorder, task("full", PROMPTS[1]))
    full = "".join(c.text for c in chunks_of(recorder, "full"))
    words = full.split()
    assert len(words) >= 2, full
    stop = " " + words[1]
    await run(supervisor, recorder, task("stopped", PROMPTS[1], stop=[stop]))
    stopped = chunks_of(recorder, "stopped")
    assert "".join(c.text for c in stopped) == full[: full.index(stop)]
    assert stopped[-1].finish_reason == "stop" and stopped[-1].stop_sequence == stop


@pytest.mark.anyio
async def test_four_concurrent_requests_give_each_ones_text_alone(
        runner: tuple[RunnerSupervisor, Recorder]) -> None:
    supervisor, recorder = runner
    for number, prompt in enumerate(PROMPTS):
        await run(supervisor, recorder, task(f"alone-{number}", prompt))
    await run(supervisor, recorder,
              *[task(f"together-{n}", prompt) for n, prompt in enumerate(PROMPTS)])
    for number in range(len(PROMPTS)):
        alone = [t for c in chunks_of(recorder, f"alone-{number}") for t in c.token_ids]
        together = [t for c in chunks_of(recorder, f"together-{number}") for t in c.token_ids]
        assert together == alone, PROMPTS[number]
    texts = {"".join(c.text for c in chunks_of(recorder, f"together-{n}")) for n in range(4)}
    assert len(texts) == 4  # four different answers, not one copied
    order: list[str] = [c.command_id for c in recorder.chunks
                        if c.command_id.startswith("cmd-together")]
    assert order.index("cmd-together-3") < len(order) - 1 - order[::-1].index("cmd-together-0")


def started(supervisor: RunnerSupervisor) -> bool:
    return supervisor.status is not None


def ready(supervisor: RunnerSupervisor) -> bool:
    return isinstance(supervisor.status, RunnerReady)


@pytest.mark.anyio
async def test_two_pipeline_runners_agree_and_only_rank_zero_speaks(
        tmp_path: Path) -> None:
    """Two runner processes on a loopback ring (the tiny model split by layers): warm-up
    and tasks reach the ranks at different times, one task is cancelled on rank 1 only;
    rank 0 streams what one process would say, rank 1 stays silent but ends every task."""
    model_dir = write_tiny_model(tmp_path / "tiny")
    hosts = ",".join(f"127.0.0.1:{free_port()}" for _ in range(2))
    recorders = [Recorder(), Recorder()]
    supervisors = [RunnerSupervisor(
        runner_id=RunnerId(f"rank-{rank}"), instance_id=InstanceId("inst-pipe"),
        engine=MLX, on_event=recorders[rank].on_event,
        on_chunk=recorders[rank].on_chunk,
        config=EngineConfig(model_path=str(model_dir), context_token_limit=512, n_threads=1,
                            start_layer=rank, end_layer=rank + 1, world_size=2, rank=rank,
                            options=MlxOptions.parse({"ring_hosts": hosts,
                                                      "sharding": "pipeline"})))
        for rank in range(2)]
    solo = MlxEngine(EngineConfig(model_path=str(model_dir), context_token_limit=512))
    solo.load()
    expected = [t for c in solo.generate(task("p", PROMPTS[0]).params) for t in c.token_ids]
    async with anyio.create_task_group() as tasks:
        for supervisor in supervisors:
            tasks.start_soon(supervisor.run)
            await wait_until(partial(started, supervisor))
            supervisor.send(messages.LoadModelRequest())
        supervisors[0].send(messages.WarmUpRequest())
        await anyio.sleep(1.0)  # rank 1 is told to warm up later: rank 0 must wait for it
        supervisors[1].send(messages.WarmUpRequest())
        for supervisor in supervisors:
            await wait_until(partial(ready, supervisor), timeout=SECONDS)
        supervisors[0].start_task(task("p", PROMPTS[0]))
        supervisors[0].start_task(task("long", PROMPTS[1], max_tokens=400))
        await anyio.sleep(0.5)
        for one in (task("long", PROMPTS[1], max_tokens=400), task("p", PROMPTS[0])):
            supervisors[1].start_task(one)
        await wait_until(lambda: len(chunks_of(recorders[0], "long")) >= 2, timeout=SECONDS)
        supervisors[1].cancel_task(TaskId("long"))
        for recorder in recorders:
            for task_id in ("p", "long"):
                await wait_until(partial(recorder.task_ended, task_id), timeout=SECONDS)
        for supervisor in supervisors:
            await supervisor.shutdown(timeout=3.0)
        tasks.cancel_scope.cancel()
    for recorder in recorders:
        assert recorder.task_statuses("p") == ["running", "complete"]
        assert recorder.task_statuses("long") == ["running", "cancelled"]
    assert recorders[1].chunks == []
    assert [t for c in chunks_of(recorders[0], "p") for t in c.token_ids] == expected


def failed(supervisor: RunnerSupervisor) -> bool:
    return isinstance(supervisor.status, RunnerFailed)


@pytest.mark.anyio
async def test_two_ranks_holding_different_weights_refuse_to_load(tmp_path: Path) -> None:
    """The worker gives each rank the digest of its files; ranks whose digests differ
    both fail their load naming the two digests, instead of serving nonsense."""
    model_dir = write_tiny_model(tmp_path / "tiny")
    hosts = ",".join(f"127.0.0.1:{free_port()}" for _ in range(2))
    digests = [hashlib.sha256(b"one copy").hexdigest(),
               hashlib.sha256(b"another copy").hexdigest()]
    supervisors = [RunnerSupervisor(
        runner_id=RunnerId(f"rank-{rank}"), instance_id=InstanceId("inst-odd"),
        engine=MLX, on_event=Recorder().on_event, on_chunk=Recorder().on_chunk,
        config=EngineConfig(model_path=str(model_dir), context_token_limit=512, n_threads=1,
                            start_layer=rank, end_layer=rank + 1, world_size=2, rank=rank,
                            options=MlxOptions.parse({"ring_hosts": hosts, "sharding": "pipeline",
                                                      "weights_sha256": digests[rank]})))
        for rank in range(2)]
    async with anyio.create_task_group() as tasks:
        for supervisor in supervisors:
            tasks.start_soon(supervisor.run)
            await wait_until(partial(started, supervisor))
            supervisor.send(messages.LoadModelRequest())
        for supervisor in supervisors:
            await wait_until(partial(failed, supervisor), timeout=SECONDS)
        tasks.cancel_scope.cancel()
    for supervisor in supervisors:
        assert isinstance(supervisor.status, RunnerFailed)
        error = supervisor.status.error
        assert "hold different weights" in error, error
        assert digests[0][:12] in error and digests[1][:12] in error
