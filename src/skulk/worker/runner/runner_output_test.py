"""The supervisor's end of a runner's pipe on a real pipe and event loop: messages as they
come, handled in the read callback where they can be, and a bad frame ending the reading
with what it was."""

import os

import anyio
import pytest

from skulk.shared.types.ids import TaskId
from skulk.shared.types.runners import RunnerReady
from skulk.worker.runner import messages
from skulk.worker.runner.messages import FromRunner
from skulk.worker.runner.pipe_frames import encode
from skulk.worker.runner.runner_output import RunnerOutput

ACKNOWLEDGED = messages.TaskAcknowledged(task_id=TaskId("t1"))


def everything_left(batch: list[FromRunner]) -> list[FromRunner]:
    return batch


@pytest.mark.anyio
async def test_a_bad_frame_ends_the_output_and_says_what_came() -> None:
    read_end, write_end = os.pipe()
    output = RunnerOutput(read_end, everything_left)
    os.write(write_end, encode([ACKNOWLEDGED, messages.ShutdownRequest(), ACKNOWLEDGED]))
    assert await output.take(5.0) == [ACKNOWLEDGED]
    assert output.ended and not output.torn
    assert output.bad_frame is not None
    assert "runner → worker pipe carried a ShutdownRequest" in output.bad_frame
    output.close()
    os.close(write_end)


@pytest.mark.anyio
async def test_what_the_callback_handles_wakes_no_one_and_what_it_leaves_is_taken() -> None:
    read_end, write_end = os.pipe()
    handled: list[FromRunner] = []

    def keep_statuses(batch: list[FromRunner]) -> list[str]:
        handled.extend(batch)
        return [m.status.kind for m in batch if isinstance(m, messages.StatusReport)]

    output = RunnerOutput(read_end, keep_statuses)
    taken: list[list[str]] = []

    async def take_for(seconds: float) -> None:
        taken.append(await output.take(seconds))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(take_for, 0.3)
        await anyio.sleep(0.05)
        os.write(write_end, encode([ACKNOWLEDGED]))
        await anyio.sleep(0.1)
        assert handled == [ACKNOWLEDGED]  # handled in the callback ...
        assert taken == []  # ... and the taker still waits: nothing was left for it
    assert taken == [[]]  # its patience ran out
    os.write(write_end, encode([messages.StatusReport(status=RunnerReady()), ACKNOWLEDGED]))
    with anyio.fail_after(5):
        assert await output.take(5.0) == ["ready"]
    os.close(write_end)
    with anyio.fail_after(5):
        assert await output.take(5.0) == []
    assert output.ended
    output.close()


@pytest.mark.anyio
async def test_a_failure_in_the_callback_is_raised_by_take_and_stops_the_reading() -> None:
    read_end, write_end = os.pipe()

    def refuse(batch: list[FromRunner]) -> list[FromRunner]:
        raise RuntimeError("cannot hand over")

    output = RunnerOutput(read_end, refuse)
    os.write(write_end, encode([ACKNOWLEDGED]))
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="cannot hand over"):
        await output.take(5.0)
    assert output.ended
    output.close()
    os.close(write_end)


@pytest.mark.anyio
async def test_what_arrives_while_the_taker_is_busy_goes_through_at_once_in_one_batch() -> None:
    """Reads that come while the supervisor's task is away sending wait as they came, so
    that the batch it takes next can merge a request's tokens that piled up."""
    read_end, write_end = os.pipe()
    batches: list[int] = []

    def count(batch: list[FromRunner]) -> list[int]:
        batches.append(len(batch))
        return [len(batch)]

    output = RunnerOutput(read_end, count)
    for _ in range(3):  # no one waits in `take`: three reads, each waiting as it came
        os.write(write_end, encode([ACKNOWLEDGED]))
        await anyio.sleep(0.02)
    assert batches == []
    with anyio.fail_after(5):
        assert await output.take(5.0) == [3]
    assert batches == [3]
    output.close()
    os.close(write_end)
