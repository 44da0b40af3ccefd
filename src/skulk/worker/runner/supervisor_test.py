"""The supervisor with real spawned runner processes running the echo test engine."""

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from multiprocessing.connection import Connection
from typing import cast

import anyio
import psutil
import pytest

from skulk.shared.types.chunks import ErrorChunk, TokenChunk
from skulk.shared.types.events import RunnerStatusUpdated
from skulk.shared.types.ids import InstanceId, RunnerId, TaskId
from skulk.shared.types.runners import RunnerCreated, RunnerFailed, RunnerShutdown
from skulk.shared.types.tasks import TextGenerationTask
from skulk.testing import factories as f
from skulk.testing.echo.description import ECHO, EchoOptions
from skulk.testing.runners import Recorder, supervised_runner, wait_until
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.pipe_frames import encode
from skulk.worker.runner.supervisor import RunnerSupervisor


def task(task_id: str, words: int, command_id: str | None = None) -> TextGenerationTask:
    text = " ".join(f"w{i}" for i in range(words))
    return f.task(task_id, command_id=command_id or f"cmd-{task_id}").model_copy(
        update={"params": f.params(text).model_copy(update={"max_tokens": None})})


@pytest.fixture
async def ready_runner() -> AsyncIterator[tuple[RunnerSupervisor, Recorder]]:
    async with echo_runner({"delay": "0.02"}) as pair:
        yield pair


def echo_runner(options: dict[str, str], limit: int = 1000
            ) -> contextlib.AbstractAsyncContextManager[tuple[RunnerSupervisor, Recorder]]:
    return supervised_runner(engine=ECHO, config=EngineConfig(
        model_path="unused", context_token_limit=limit, options=EchoOptions.parse(options)))


@pytest.mark.anyio
async def test_serves_a_task_with_ordered_chunks_and_one_terminal_status(
        ready_runner: tuple[RunnerSupervisor, Recorder]) -> None:
    supervisor, recorder = ready_runner
    assert recorder.runner_statuses()[:5] == ["created", "loading", "loaded", "warming_up",
                                              "ready"]
    supervisor.start_task(task("t1", 4))
    await wait_until(lambda: "complete" in recorder.task_statuses("t1"))
    await anyio.sleep(0.1)
    assert recorder.task_statuses("t1") == ["running", "complete"]
    # Consecutive from 0 (chunks that queued up together leave as one, so how many there
    # are depends on timing; the text and the single final chunk do not).
    assert [c.sequence for c in recorder.chunks] == list(range(len(recorder.chunks)))
    texts = "".join(c.chunk.text for c in recorder.chunks if isinstance(c.chunk, TokenChunk))
    assert texts == "w0 w1 w2 w3"
    finals = [c for c in recorder.chunks
              if isinstance(c.chunk, TokenChunk) and c.chunk.finish_reason is not None]
    assert finals == recorder.chunks[-1:]
    assert supervisor.in_flight == {}


@pytest.mark.anyio
async def test_cancel_stops_the_stream_between_tokens(
        ready_runner: tuple[RunnerSupervisor, Recorder]) -> None:
    supervisor, recorder = ready_runner
    supervisor.start_task(task("t1", 500))
    await wait_until(lambda: len(recorder.chunks) >= 3)
    supervisor.cancel_task(TaskId("t1"))
    await wait_until(lambda: "cancelled" in recorder.task_statuses("t1"))
    count = len(recorder.chunks)
    await anyio.sleep(0.2)
    assert len(recorder.chunks) == count < 100
    supervisor.start_task(task("t2", 2))
    await wait_until(lambda: "complete" in recorder.task_statuses("t2"))


@pytest.mark.anyio
async def test_context_overflow_fails_the_request_not_the_runner() -> None:
    async with echo_runner({}, limit=3) as (supervisor, recorder):
        supervisor.start_task(task("t1", 5))
        await wait_until(lambda: "failed" in recorder.task_statuses("t1"))
        [error] = [c.chunk for c in recorder.chunks if isinstance(c.chunk, ErrorChunk)]
        assert error.error_kind == "context_length_exceeded"
        supervisor.start_task(task("t2", 2))
        await wait_until(lambda: "complete" in recorder.task_statuses("t2"))


@pytest.mark.anyio
async def test_a_killed_runner_fails_and_errors_every_in_flight_request(
        ready_runner: tuple[RunnerSupervisor, Recorder]) -> None:
    supervisor, recorder = ready_runner
    supervisor.start_task(task("t1", 500))
    supervisor.start_task(task("t2", 5))
    await wait_until(lambda: len(recorder.chunks) >= 2)
    assert supervisor.pid is not None
    os.kill(supervisor.pid, signal.SIGKILL)
    await wait_until(lambda: supervisor.exited)
    assert isinstance(supervisor.status, RunnerFailed)
    assert "exited with code -9" in supervisor.status.error
    for task_id in ("t1", "t2"):
        assert recorder.task_statuses(task_id)[-1] == "failed"
        assert recorder.task_statuses(task_id).count("failed") == 1
        errors = [c.chunk for c in recorder.chunks if isinstance(c.chunk, ErrorChunk)
                  and c.command_id == f"cmd-{task_id}"]
        assert len(errors) == 1 and errors[0].error_kind == "runner_failed"


def unready_echo_runner(options: dict[str, str], recorder: Recorder) -> RunnerSupervisor:
    """A supervisor of an echo runner that nobody has told to load yet."""
    return RunnerSupervisor(
        runner_id=RunnerId("run-1"), instance_id=InstanceId("inst-1"), engine=ECHO,
        config=EngineConfig(model_path="x", context_token_limit=10,
                            options=EchoOptions.parse(options)),
        on_event=recorder.on_event, on_chunk=recorder.on_chunk)


@pytest.mark.anyio
async def test_a_failed_load_is_reported_once_and_the_process_exits() -> None:
    recorder = Recorder()
    supervisor = unready_echo_runner({"fail_load": "1"}, recorder)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(supervisor.run)
        await wait_until(lambda: supervisor.status is not None)
        supervisor.send(messages.LoadModelRequest())
        await wait_until(lambda: supervisor.exited)
    assert recorder.runner_statuses() == ["created", "loading", "failed"]
    assert "told to fail" in cast(RunnerFailed, supervisor.status).error


@pytest.mark.anyio
async def test_shutdown_reaps_and_escalates_to_sigkill() -> None:
    async with echo_runner({"ignore_sigterm": "1", "delay": "30"}) as (supervisor, recorder):
        supervisor.start_task(task("t1", 3))
        await wait_until(lambda: recorder.task_statuses("t1") == ["running"])
        pid = supervisor.pid
        assert pid is not None
        started = time.monotonic()
        await supervisor.shutdown(timeout=0.5)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
        assert time.monotonic() - started < 5
        assert recorder.task_statuses("t1") == ["running", "cancelled"]
        assert isinstance(recorder.events[-1], RunnerStatusUpdated)
        assert isinstance(recorder.events[-1].status, RunnerShutdown)


def test_the_runner_exits_when_its_parent_dies() -> None:
    script = textwrap.dedent("""
        import multiprocessing, os, sys, time
        from skulk.worker.engines.protocol import EngineConfig
        from skulk.worker.runner.bootstrap import entrypoint
        from skulk.testing.echo.description import ECHO
        if __name__ == "__main__":
            ctx = multiprocessing.get_context("spawn")
            config = EngineConfig(model_path="x", context_token_limit=10)
            output = ctx.Pipe(duplex=False)[1]
            inbox = ctx.Pipe(duplex=False)  # its write end held open until this process dies
            child = ctx.Process(target=entrypoint, daemon=False,
                                args=(ECHO, config, inbox[0], output, os.getpid()))
            child.start()
            print(child.pid, flush=True)
            time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": "src"})
    assert parent.stdout is not None
    runner_pid = int(parent.stdout.readline())
    assert psutil.pid_exists(runner_pid)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while psutil.pid_exists(runner_pid) and psutil.Process(runner_pid).status() != "zombie":
        assert time.monotonic() < deadline, "the orphaned runner kept running"
        time.sleep(0.05)


def _runner_sending_a_bad_frame(_engine: object, _config: object, _inbox: object,
                                outbox: Connection, *_: object) -> None:
    """Stands in for the runner's entrypoint (spawned, so module level): a status, then a
    frame that is no runner message, then it waits to be killed."""
    os.write(outbox.fileno(), encode([messages.StatusReport(status=RunnerCreated()),
                                      {"not": "a message"}]))
    time.sleep(60)


@pytest.mark.anyio
async def test_a_runner_sending_a_bad_frame_is_killed_and_failed_naming_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("skulk.worker.runner.runner_spawn.entrypoint",
                        _runner_sending_a_bad_frame)
    recorder = Recorder()
    supervisor = RunnerSupervisor(
        runner_id=RunnerId("run-1"), instance_id=InstanceId("inst-1"), engine=ECHO,
        config=EngineConfig(model_path="x", context_token_limit=10),
        on_event=recorder.on_event, on_chunk=recorder.on_chunk)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(supervisor.run)
        await wait_until(lambda: supervisor.exited)
    assert recorder.runner_statuses() == ["created", "failed"]
    error = cast(RunnerFailed, supervisor.status).error
    assert "bad message" in error and "carried a dict ({'not': 'a message'})" in error
    assert supervisor.pid is not None and (not psutil.pid_exists(supervisor.pid)
                                           or psutil.Process(supervisor.pid).status() == "zombie")


@pytest.mark.anyio
async def test_a_runner_shut_down_before_it_was_spawned_is_never_spawned() -> None:
    # The worker starts `run` with start_soon and may shut the runner down (its instance
    # deleted while the worker was still creating it) before that task first runs.
    supervisor = RunnerSupervisor(
        runner_id=RunnerId("run-1"), instance_id=InstanceId("inst-1"), engine=ECHO,
        config=EngineConfig(model_path="x", context_token_limit=10),
        on_event=Recorder().on_event, on_chunk=Recorder().on_chunk)
    try:
        with anyio.move_on_after(10):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(supervisor.run)
                await supervisor.shutdown()
        assert supervisor.pid is None, "a runner nobody supervises any more was spawned"
    finally:
        if supervisor.pid is not None and psutil.pid_exists(supervisor.pid):
            psutil.Process(supervisor.pid).kill()


@pytest.mark.anyio
async def test_a_runner_busy_loading_is_stopped_without_waiting_for_an_answer() -> None:
    # A load reads no messages: asking first would hold the worker's planning for the
    # whole join timeout before the SIGTERM that actually stops it.
    recorder = Recorder()
    supervisor = unready_echo_runner({"load_seconds": "60"}, recorder)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(supervisor.run)
        await wait_until(lambda: supervisor.status is not None)
        supervisor.send(messages.LoadModelRequest())
        await wait_until(lambda: recorder.runner_statuses()[-1:] == ["loading"])
        pid = supervisor.pid
        assert pid is not None
        started = time.monotonic()
        await supervisor.shutdown(timeout=10)
        assert time.monotonic() - started < 5, "shutdown waited for a loading runner to answer"
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
        assert recorder.runner_statuses()[-2:] == ["loading", "shutdown"]
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_runner_reports_running_once_however_many_requests_join(
        ready_runner: tuple[RunnerSupervisor, Recorder]) -> None:
    supervisor, recorder = ready_runner
    warmed = len(recorder.runner_statuses())
    supervisor.start_task(task("t1", 20))
    await wait_until(lambda: "running" in recorder.task_statuses("t1"))
    supervisor.start_task(task("t2", 5))  # joins while t1 still runs
    await wait_until(lambda: "complete" in recorder.task_statuses("t1")
                     and "complete" in recorder.task_statuses("t2"))
    await wait_until(lambda: recorder.runner_statuses()[-1] == "ready")
    # Each status is an event the master indexes: a second request changes nothing.
    assert recorder.runner_statuses()[warmed:] == ["running", "ready"]
