"""The order a supervisor reports one read of runner messages in: chunks first (a first
token must not wait behind the master's round for the "running" status), then the events
in the runner's order, a task's end after its chunks. No process: the messages are
handed over as the pipe would."""

import pytest

from skulk.shared.types.chunks import DataChunk, TokenChunk
from skulk.shared.types.events import Event, TaskStatusUpdated
from skulk.shared.types.ids import InstanceId, RunnerId, TaskId
from skulk.testing import factories as f
from skulk.testing.echo.description import ECHO
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.supervisor import RunnerSupervisor

T = TaskId("t1")


def supervisor_logging(log: list[str], rank: int = 0) -> RunnerSupervisor:
    async def on_event(event: Event) -> None:
        if isinstance(event, TaskStatusUpdated):
            log.append(f"status {event.status}")

    async def on_chunk(chunk: DataChunk) -> None:
        assert isinstance(chunk.chunk, TokenChunk)
        log.append(f"chunk {chunk.sequence} {chunk.chunk.text}")

    return RunnerSupervisor(runner_id=RunnerId("r"), instance_id=InstanceId("i"),
                            engine=ECHO, on_event=on_event, on_chunk=on_chunk,
                            config=EngineConfig(model_path="unused", context_token_limit=64,
                                                rank=rank))


def produced(text: str, finish: bool = False) -> messages.ChunkProduced:
    return messages.ChunkProduced(task_id=T, command_id=f.task("t1").command_id,
                                  chunk=TokenChunk(text=text,
                                                   finish_reason="stop" if finish else None))


@pytest.mark.anyio
async def test_chunks_leave_before_the_running_status_and_the_end_after_them() -> None:
    log: list[str] = []
    supervisor = supervisor_logging(log)
    supervisor.start_task(f.task("t1").model_copy(update={"params": f.params().model_copy(
        update={"trace": True})}))
    await supervisor._forward_batch([messages.TaskAcknowledged(task_id=T), produced("a")])
    await supervisor._forward_batch([produced("b", finish=True),
                                     messages.TaskEnded(task_id=T, status="complete")])
    assert log == ["chunk 0 a", "status running", "chunk 1 b", "status complete"]


@pytest.mark.anyio
async def test_a_traced_request_keeps_its_spans_in_order() -> None:
    spans: list[list[str]] = []

    async def on_chunk(chunk: DataChunk) -> None:
        if isinstance(chunk.chunk, TokenChunk) and chunk.chunk.finish_reason:
            spans.append([span.name for span in chunk.chunk.spans])

    supervisor = supervisor_logging([])
    supervisor._on_chunk = on_chunk
    supervisor.start_task(f.task("t1").model_copy(update={"params": f.params().model_copy(
        update={"trace": True})}))
    await supervisor._forward_batch([messages.TaskAcknowledged(task_id=T), produced("a")])
    await supervisor._forward_batch([produced("b", finish=True)])
    assert spans == [["runner.queue", "runner.prefill", "runner.decode"]]


@pytest.mark.anyio
async def test_other_ranks_send_no_chunks_but_their_statuses() -> None:
    log: list[str] = []
    supervisor = supervisor_logging(log, rank=1)
    supervisor.start_task(f.task("t1"))
    await supervisor._forward_batch([messages.TaskAcknowledged(task_id=T), produced("a"),
                                     messages.TaskEnded(task_id=T, status="complete")])
    assert log == ["status running", "status complete"]


def test_a_stream_on_this_node_gets_its_chunks_in_the_read_callback_and_nothing_is_left() -> None:
    now: list[str] = []

    def hand_over(chunk: DataChunk) -> bool:
        assert isinstance(chunk.chunk, TokenChunk)
        now.append(f"{chunk.sequence} {chunk.chunk.text} {chunk.chunk.token_ids}")
        return True

    supervisor = supervisor_logging([])
    supervisor._on_chunk_now = hand_over
    supervisor.start_task(f.task("t1"))
    command = f.task("t1").command_id
    one = messages.tokens_produced([(T, command, "a", [1])])
    two = messages.tokens_produced([(T, command, "b", [2]), (T, command, "c", [3])])
    assert supervisor._at_once([one]) == []  # one stream's token: the fast path
    assert supervisor._at_once([two]) == []  # two pieces of one request: merged first
    assert supervisor._at_once([messages.TaskEnded(task_id=T, status="complete")]) == [
        messages.TaskEnded(task_id=T, status="complete")]  # left for the task
    assert now == ["0 a [1]", "1 bc [2, 3]"]


def test_a_chunk_that_must_travel_is_left_for_the_task_before_the_events() -> None:
    supervisor = supervisor_logging([])
    supervisor._on_chunk_now = lambda chunk: False  # another node took the request
    supervisor.start_task(f.task("t1"))
    tokens = messages.tokens_produced([(T, f.task("t1").command_id, "a", [1])])
    acknowledged = messages.TaskAcknowledged(task_id=T)
    left = supervisor._at_once([acknowledged, tokens])
    assert [type(item).__name__ for item in left] == ["DataChunk", "TaskAcknowledged"]
