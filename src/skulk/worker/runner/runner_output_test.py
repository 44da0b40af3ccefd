"""The supervisor's end of a runner's pipe on a real pipe and event loop: messages as they
come, and a bad frame ending the reading with what it was."""

import os

import pytest

from skulk.shared.types.ids import TaskId
from skulk.worker.runner import messages
from skulk.worker.runner.pipe_frames import encode
from skulk.worker.runner.runner_output import RunnerOutput


@pytest.mark.anyio
async def test_a_bad_frame_ends_the_output_and_says_what_came() -> None:
    read_end, write_end = os.pipe()
    output = RunnerOutput(read_end)
    acknowledged = messages.TaskAcknowledged(task_id=TaskId("t1"))
    os.write(write_end, encode([acknowledged, messages.ShutdownRequest(), acknowledged]))
    assert await output.take(5.0) == [acknowledged]
    assert output.ended and not output.torn
    assert output.bad_frame is not None
    assert "runner → worker pipe carried a ShutdownRequest" in output.bad_frame
    output.close()
    os.close(write_end)
