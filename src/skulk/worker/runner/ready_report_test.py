"""A runner says `running` when a request joins it idle and `ready` only once it has
stayed without requests for a moment: the bookkeeping alone, then the runner with the
echo engine, a request right after another, and its serve loop saying `ready` late."""

import os
import time
from typing import cast

from skulk.shared.types.ids import TaskId
from skulk.shared.types.runners import RunnerReady, RunnerRunning, RunnerStatus
from skulk.testing import factories as f
from skulk.testing.echo.description import ECHO, EchoOptions
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.bootstrap import Runner
from skulk.worker.runner.messages import FromRunner
from skulk.worker.runner.pipe_frames import FrameWriter, encode
from skulk.worker.runner.ready_report import ReadyReport
from skulk.worker.runner.runner_inbox import RunnerInbox
from skulk.worker.runner.step_frames_test import Outbox


def test_ready_is_due_only_after_the_runner_stayed_idle_for_the_delay() -> None:
    report = ReadyReport(after_seconds=1.0)
    assert report.joined()  # the first request: say `running`
    assert not report.joined()  # another beside it: nothing to say
    report.drained(now=10.0)
    assert report.wait(10.25) == 0.75
    assert not report.due(10.5)
    assert report.due(11.0)
    assert not report.due(12.0)  # once
    assert report.wait(12.0) is None
    assert report.joined()  # `ready` was said: `running` again


def test_a_request_within_the_delay_keeps_the_runner_running_with_nothing_said() -> None:
    report = ReadyReport(after_seconds=1.0)
    report.joined()
    report.drained(now=10.0)
    assert not report.joined()  # came 0.1 s later: still `running`
    assert report.wait(10.1) is None and not report.due(20.0)
    report.drained(now=30.0)
    assert report.due(31.0)


def test_nothing_is_due_for_a_runner_that_never_ran() -> None:
    report = ReadyReport(after_seconds=1.0)
    report.drained(now=10.0)  # (a warm-up's end, say)
    assert report.wait(10.0) is None and not report.due(20.0)


def statuses(outbox: Outbox) -> list[RunnerStatus]:
    return [message.status for write in outbox.writes for message in write
            if isinstance(message, messages.StatusReport)]


def test_a_request_right_after_another_flips_nothing_and_ready_comes_late() -> None:
    config = EngineConfig(model_path="unused", context_token_limit=64,
                          options=EchoOptions(max_batch=2))
    read_end, write_end = os.pipe()
    outbox = Outbox()
    runner = Runner(ECHO, config, RunnerInbox(read_end), cast(FrameWriter[FromRunner], outbox))
    runner._ready = ReadyReport(after_seconds=0.05)
    runner._load()
    engine = runner._engine
    assert engine is not None
    try:
        for task_id in (TaskId("task-a"), TaskId("task-b")):  # one after the other
            task = f.task(task_id).model_copy(update={"params": f.params("one two")})
            runner._handle_while_idle(messages.StartTaskRequest(task=task))
            while engine.has_work:
                runner._step(engine)
        assert [type(s) for s in statuses(outbox)] == [RunnerRunning]  # no flip between
        time.sleep(0.1)  # idle past the delay
        os.write(write_end, encode([messages.ShutdownRequest()]))
        runner.serve()  # says `ready` at its loop's first turn, then takes the shutdown
        said = [type(s) for s in statuses(outbox) if type(s) in (RunnerRunning, RunnerReady)]
        assert said == [RunnerRunning, RunnerReady]
    finally:
        os.close(read_end)
        os.close(write_end)
