"""The runner packs a step's plain tokens for every request into one message, sent before
anything that came after them in the step; the rest goes as it is. No process: the echo
engine runs in this one and the outbox records what would be written."""

import os
from typing import cast

from skulk.shared.types.ids import CommandId, TaskId
from skulk.testing import factories as f
from skulk.testing.echo.description import ECHO, EchoOptions
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.bootstrap import Runner
from skulk.worker.runner.messages import FromRunner
from skulk.worker.runner.pipe_frames import FrameWriter
from skulk.worker.runner.runner_inbox import RunnerInbox


class Outbox:
    """Records each write the runner would make: its messages, held or not."""

    def __init__(self) -> None:
        self.writes: list[list[FromRunner]] = []
        self._held: list[FromRunner] | None = None

    def send(self, message: FromRunner) -> None:
        if self._held is None:
            self.writes.append([message])
        else:
            self._held.append(message)

    def hold(self) -> None:
        self._held = []

    def flush(self) -> None:
        held, self._held = self._held, None
        if held:
            self.writes.append(held)


def test_a_step_for_three_requests_writes_their_tokens_as_one_message() -> None:
    config = EngineConfig(model_path="unused", context_token_limit=64,
                          options=EchoOptions(max_batch=3))
    outbox = Outbox()
    read_end, write_end = os.pipe()  # only the steps run: nothing is read from it
    runner = Runner(ECHO, config, RunnerInbox(read_end), cast(FrameWriter[FromRunner], outbox))
    runner._load()
    tasks = [f.task(f"t{index}").model_copy(update={"params": f.params().model_copy(
        update={"messages": [f.params().messages[0].model_copy(
            update={"content": "one two"})]})}) for index in range(3)]
    for task in tasks:
        runner._handle_while_idle(messages.StartTaskRequest(task=task))
    assert runner._engine is not None
    runner._step(runner._engine)  # the three join
    runner._step(runner._engine)  # a word each
    runner._step(runner._engine)  # the second word each
    runner._step(runner._engine)  # each one's last chunk and end
    joined, first_words, second_words, ends = outbox.writes[-4:]
    assert all(isinstance(m, messages.TaskAcknowledged | messages.StatusReport) for m in joined)
    for step, words in ((first_words, "one"), (second_words, " two")):
        [packed] = step
        assert isinstance(packed, messages.TokensProduced)
        assert [(task_id, text) for task_id, _, text, _ in packed.pieces] == [
            (TaskId(f"t{index}"), words) for index in range(3)]
        assert {command for _, command, _, _ in packed.pieces} == {
            CommandId(task.command_id) for task in tasks}
    assert [type(m).__name__ for m in ends][:6] == ["ChunkProduced", "TaskEnded"] * 3
    os.close(read_end)
    os.close(write_end)
