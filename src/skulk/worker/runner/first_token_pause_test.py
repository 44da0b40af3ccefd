"""A runner whose compute threads take every core waits after a request's first token
until the node says it went out, or `MOST_SECONDS`; the bookkeeping alone, then the
runner with the echo engine in this process and its inbox on a real pipe."""

import os
import time
from collections.abc import Iterator
from typing import cast

import pytest

from skulk.shared.types.ids import TaskId
from skulk.testing import factories as f
from skulk.testing.echo.description import ECHO, EchoOptions
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import first_token_pause, messages
from skulk.worker.runner.bootstrap import Runner
from skulk.worker.runner.first_token_pause import MOST_SECONDS, FirstTokenPause
from skulk.worker.runner.messages import FromRunner, ToRunner
from skulk.worker.runner.pipe_frames import FrameWriter, encode
from skulk.worker.runner.runner_inbox import RunnerInbox
from skulk.worker.runner.step_frames_test import Outbox

A, B = TaskId("task-a"), TaskId("task-b")


def test_only_an_expected_tasks_first_output_is_awaited() -> None:
    pause = FirstTokenPause(enabled=True)
    pause.produced(A)  # no acknowledgement comes for it
    assert pause.awaiting == set()
    pause.expect(A)
    pause.produced(A)
    assert pause.awaiting == {A}
    pause.acknowledged(A)
    pause.produced(A)  # its later output
    assert pause.awaiting == set()


def test_an_ended_task_and_a_wait_given_up_await_nothing() -> None:
    pause = FirstTokenPause(enabled=True)
    for task_id in (A, B):
        pause.expect(task_id)
        pause.produced(task_id)
    pause.ended(A)  # one chunk was the whole answer: nothing acknowledges it
    assert pause.awaiting == {B}
    pause.give_up()
    assert pause.awaiting == set()
    pause.acknowledged(B)  # late: changes nothing
    assert pause.awaiting == set()


def test_a_pause_that_is_off_expects_nothing() -> None:
    pause = FirstTokenPause(enabled=False)
    pause.expect(A)
    pause.produced(A)
    assert pause.awaiting == set()


def test_compute_fills_the_cores_when_its_threads_take_them_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    assert first_token_pause.compute_fills_cores(2)
    assert first_token_pause.compute_fills_cores(None)  # the engine's default: every core
    assert not first_token_pause.compute_fills_cores(1)  # a core left to the node


@pytest.fixture
def runner() -> Iterator[tuple[Runner, int]]:
    """A runner with the echo engine loaded, its threads on every core, and the write end
    of its inbox."""
    config = EngineConfig(model_path="unused", context_token_limit=64,
                          options=EchoOptions(max_batch=2))
    read_end, write_end = os.pipe()
    made = Runner(ECHO, config, RunnerInbox(read_end),
                  cast(FrameWriter[FromRunner], Outbox()))
    made._load()
    try:
        yield made, write_end
    finally:
        os.close(read_end)
        os.close(write_end)


def start(runner: Runner, task_id: TaskId, acknowledged: bool) -> None:
    task = f.task(task_id).model_copy(update={"params": f.params("one two three")})
    runner._handle_while_idle(messages.StartTaskRequest(task=task,
                                                        first_token_ack=acknowledged))


def step(runner: Runner) -> float:
    assert runner._engine is not None
    started = time.monotonic()
    runner._step(runner._engine)
    return time.monotonic() - started


def send(write_end: int, *sent: ToRunner) -> None:
    os.write(write_end, encode(list(sent)))


def test_the_runner_waits_at_most_the_bound_for_an_acknowledgement(
        runner: tuple[Runner, int]) -> None:
    made, _ = runner
    start(made, A, acknowledged=True)
    step(made)  # it joins
    assert step(made) >= MOST_SECONDS  # its first word: nobody says it went out
    assert made._first_tokens.awaiting == set()


class Recorded(FirstTokenPause):
    """Notes what was still awaited each time a wait ended."""

    def __init__(self) -> None:
        super().__init__(enabled=True)
        self.left_at_ends: list[set[TaskId]] = []

    def give_up(self) -> None:
        self.left_at_ends.append(set(self.awaiting))
        super().give_up()


def test_an_acknowledgement_ends_the_wait_and_what_came_with_it_is_handled(
        runner: tuple[Runner, int]) -> None:
    made, write_end = runner
    made._first_tokens = pause = Recorded()
    start(made, A, acknowledged=True)
    step(made)
    other = f.task(B).model_copy(update={"params": f.params("four")})
    send(write_end, messages.StartTaskRequest(task=other), messages.FirstTokenOut(task_id=A))
    step(made)
    assert pause.left_at_ends == [set()]  # acknowledged, not given up
    assert set(made._submitted) == {A, B}  # the request that came meanwhile was taken


def waits_over_three_steps(runner: Runner) -> list[bool]:
    """One entry for each time the runner began to wait, over its next three steps (the
    join, the first word, the second)."""
    waited: list[bool] = []
    runner._await_first_tokens = lambda: waited.append(True)  # type: ignore[method-assign]
    for _ in range(3):
        step(runner)
    return waited


def test_a_runner_does_not_wait_for_a_task_nobody_acknowledges(
        runner: tuple[Runner, int]) -> None:
    made, _ = runner
    start(made, A, acknowledged=False)
    waited = waits_over_three_steps(made)
    assert waited == []


def test_a_runner_with_a_core_to_spare_does_not_wait(runner: tuple[Runner, int]) -> None:
    made, _ = runner
    made._first_tokens = FirstTokenPause(enabled=False)  # as with fewer threads than cores
    start(made, A, acknowledged=True)
    waited = waits_over_three_steps(made)
    assert waited == []
