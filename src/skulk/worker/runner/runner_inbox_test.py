import os
import queue
import threading

import anyio
import pytest

from skulk.shared.types.ids import TaskId
from skulk.testing import factories as f
from skulk.worker.runner import messages
from skulk.worker.runner.pipe_frames import encode
from skulk.worker.runner.runner_inbox import InboxWriter, RunnerInbox


@pytest.mark.anyio
async def test_messages_arrive_in_order_and_the_writers_end_is_a_shutdown() -> None:
    read_end, write_end = os.pipe()
    writer, inbox = InboxWriter(write_end), RunnerInbox(read_end)
    with pytest.raises(queue.Empty):
        inbox.get(timeout=0.01)
    writer.send(messages.LoadModelRequest())
    writer.send(messages.CancelTaskRequest(task_id=TaskId("t1")))
    assert inbox.get(timeout=1) == messages.LoadModelRequest()
    assert inbox.get_nowait() == messages.CancelTaskRequest(task_id=TaskId("t1"))
    with pytest.raises(queue.Empty):
        inbox.get_nowait()
    writer.close()
    assert inbox.get(timeout=1) == messages.ShutdownRequest()
    os.close(read_end)


@pytest.mark.anyio
async def test_a_message_larger_than_the_pipe_never_blocks_the_loop() -> None:
    read_end, write_end = os.pipe()
    writer, inbox = InboxWriter(write_end), RunnerInbox(read_end)
    prompt = "word " * 400_000  # 2 MB: many times a pipe's buffer
    task = f.task("t1").model_copy(update={"params": f.params().model_copy(update={
        "messages": [f.params().messages[0].model_copy(update={"content": prompt})]})})
    writer.send(messages.StartTaskRequest(task=task))  # returns at once, the rest buffered
    writer.send(messages.WarmUpRequest())
    received: list[messages.ToRunner] = []

    def read() -> None:  # the runner's side, in its own thread here
        while len(received) < 2:
            try:
                received.append(inbox.get(timeout=0.05))
            except queue.Empty:
                pass

    reader = threading.Thread(target=read)
    reader.start()
    with anyio.fail_after(10):
        while reader.is_alive():
            await anyio.sleep(0.01)  # the loop drains the buffer as the pipe has room
    first = received[0]
    assert isinstance(first, messages.StartTaskRequest)
    assert first.task.params.messages[0].content == prompt
    assert received[1] == messages.WarmUpRequest()
    writer.close()
    os.close(read_end)


def test_a_frame_no_runner_takes_stops_the_runner() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, encode([{"not": "a request"}]))
    with pytest.raises(RuntimeError, match="no runner takes"):
        RunnerInbox(read_end).get(timeout=1)
    os.close(read_end)
    os.close(write_end)
