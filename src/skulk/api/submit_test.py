"""Waiting for a generation's first chunk: what comes back, and the three things watched
meanwhile (the master acting on the command, the queue deadline, the client)."""

from pathlib import Path

import anyio
import pytest

from skulk.api import submit as submitting
from skulk.api.context import ApiContext, ApiSettings, ClusterView, RequestBook
from skulk.api.errors import ApiError
from skulk.api.streams import StreamRegistry
from skulk.models.catalog import ModelCatalog
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.chunks import ErrorChunk
from skulk.shared.types.commands import CancelTask, Command, TaskFinished, TextGeneration
from skulk.shared.types.events import InstanceCreated, TaskCreated, TaskStatusUpdated
from skulk.shared.types.ids import CommandId, NodeId, SessionId, TaskId
from skulk.shared.types.tasks import TaskStatus
from skulk.testing import factories as f
from skulk.testing.channels import SendThrough

COMMAND = CommandId("cmd-1")  # the factories' task answers this command


class Harness:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, queue_timeout: float = 300.0,
                 answered_send: int | None = None) -> None:
        """`answered_send`: the first chunk comes when the command was sent this many
        times (None: not by itself)."""
        monkeypatch.setattr(submitting, "new_command_id", lambda: COMMAND)
        self.sent: list[Command] = []
        self.answered_send = answered_send
        self.context = ApiContext(
            cluster=ClusterView(node_id=NodeId("a"), catalog=ModelCatalog([], Path(".")),
                                replica=StateReplica(), telemetry=TelemetryView()),
            requests=RequestBook(streams=StreamRegistry(), commands=SendThrough(self._send)),
            settings=ApiSettings(queue_timeout_seconds=queue_timeout))

    async def _send(self, command: Command) -> None:
        self.sent.append(command)
        sends = sum(isinstance(c, TextGeneration) for c in self.sent)
        if isinstance(command, TextGeneration) and sends == self.answered_send:
            self.context.requests.streams.fail(COMMAND, FIRST)

    def task_is(self, status: TaskStatus) -> None:
        state = f.state_with(InstanceCreated(instance=f.instance()), TaskCreated(task=f.task()),
                             TaskStatusUpdated(task_id=TaskId("task-1"), status=status))
        self.context.cluster.replica.restore(state, SessionId("s"), NodeId("a"))

    def kinds(self) -> list[type]:
        return [type(command) for command in self.sent]


FIRST = ErrorChunk(error_kind="internal", message="stands in for any first chunk")


async def submit(harness: Harness, client_gone: bool | None = None) -> submitting.Submitted:
    async def gone() -> bool:
        return bool(client_gone)

    with anyio.fail_after(5):
        return await submitting.submit(harness.context, f.params(), bounded=True,
                                       client_gone=None if client_gone is None else gone)


@pytest.mark.anyio
async def test_the_first_chunk_comes_back_and_the_command_went_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    harness = Harness(monkeypatch, answered_send=1)
    submitted = await submit(harness, client_gone=False)
    assert submitted.first == FIRST and submitted.command_id == COMMAND
    assert harness.kinds() == [TextGeneration]
    assert harness.context.requests.streams.is_open(COMMAND)  # the caller reads on


@pytest.mark.anyio
async def test_a_command_no_master_acted_on_is_sent_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submitting, "COMMAND_RESEND_SECONDS", 0.01)
    harness = Harness(monkeypatch, answered_send=2)
    submitted = await submit(harness)
    assert submitted.first == FIRST and harness.kinds() == [TextGeneration, TextGeneration]


@pytest.mark.anyio
async def test_a_command_the_master_acted_on_is_not_sent_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submitting, "COMMAND_RESEND_SECONDS", 0.01)
    harness = Harness(monkeypatch, queue_timeout=0.2)
    harness.task_is("running")  # the master made the task; its first token is slow
    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.3):  # past the queue deadline too: a running task waits on
            await submitting.submit(harness.context, f.params(), bounded=True)
    assert harness.kinds() == [TextGeneration, CancelTask, TaskFinished]


@pytest.mark.anyio
async def test_a_request_still_queued_at_the_deadline_is_refused_and_let_go(
        monkeypatch: pytest.MonkeyPatch) -> None:
    harness = Harness(monkeypatch, queue_timeout=0.05)
    harness.task_is("pending")
    with pytest.raises(ApiError) as refused:
        await submit(harness)
    assert (refused.value.status, refused.value.code) == (503, "queue_timeout")
    assert harness.kinds() == [TextGeneration, CancelTask, TaskFinished]
    assert not harness.context.requests.streams.is_open(COMMAND)


@pytest.mark.anyio
async def test_a_client_that_left_while_queued_ends_the_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submitting, "CLIENT_POLL_SECONDS", 0.01)
    harness = Harness(monkeypatch)
    harness.task_is("pending")
    with pytest.raises(ApiError) as gone:
        await submit(harness, client_gone=True)
    assert (gone.value.status, gone.value.code) == (499, "client_disconnected")
    assert harness.kinds() == [TextGeneration, CancelTask, TaskFinished]
    assert not harness.context.requests.streams.is_open(COMMAND)


@pytest.mark.anyio
async def test_a_client_still_there_keeps_its_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submitting, "CLIENT_POLL_SECONDS", 0.01)
    harness = Harness(monkeypatch)
    harness.task_is("pending")

    async def first_chunk_later() -> None:
        await anyio.sleep(0.1)  # several polls
        harness.context.requests.streams.fail(COMMAND, FIRST)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(first_chunk_later)
        submitted = await submit(harness, client_gone=False)
    assert submitted.first == FIRST and harness.kinds() == [TextGeneration]
