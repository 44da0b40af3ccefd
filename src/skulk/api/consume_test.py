from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from starlette.types import Message

from skulk.api.consume import event_stream
from skulk.api.context import ApiContext, ClusterView, RequestBook
from skulk.api.generation import Generation
from skulk.api.streams import StreamRegistry
from skulk.api.submit import Submitted
from skulk.models.catalog import ModelCatalog
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.commands import CancelTask, Command, TaskFinished
from skulk.shared.types.ids import CommandId, NodeId
from skulk.testing.channels import SendThrough


@pytest.mark.anyio
async def test_a_stream_never_iterated_is_still_cancelled_and_forgotten() -> None:
    sent: list[Command] = []

    async def send_command(command: Command) -> None:
        sent.append(command)

    context = ApiContext(
        cluster=ClusterView(node_id=NodeId("a"), catalog=ModelCatalog([], Path(".")),
                            replica=StateReplica(), telemetry=TelemetryView()),
        requests=RequestBook(streams=StreamRegistry(), commands=SendThrough(send_command)))
    command_id = CommandId("cmd-1")
    stream = context.requests.streams.open(command_id)
    first = TokenChunk(text="hi")
    generation = Generation(context, command_id, Submitted(command_id, stream, first), first, 0)
    iterated = False

    async def frames() -> AsyncIterator[bytes]:
        nonlocal iterated
        iterated = True
        await anyio.sleep(3600)  # the body is stuck, as behind a slow model
        yield b""

    async def receive() -> Message:
        return {"type": "http.disconnect"}  # the client has gone before anything is sent

    async def send(message: Message) -> None:
        await anyio.sleep(3600) if message["type"] == "http.response.start" else None

    response = event_stream(generation, frames())
    with anyio.fail_after(5):
        await response({"type": "http", "asgi": {"spec_version": "2.0"}}, receive, send)
    assert not iterated and not context.requests.streams.is_open(command_id)
    cancel, finished = sent
    assert isinstance(cancel, CancelTask) and cancel.target_command_id == command_id
    assert isinstance(finished, TaskFinished) and finished.target_command_id == command_id
