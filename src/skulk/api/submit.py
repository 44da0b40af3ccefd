"""Handing one generation to the cluster and letting go of it: the stream is registered
before the command is sent (so no chunk is missed), and released exactly once."""

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.resend import COMMAND_RESEND_SECONDS
from skulk.api.streams import CommandStream
from skulk.shared.types.chunks import Chunk
from skulk.shared.types.commands import CancelTask, TaskFinished, TextGeneration
from skulk.shared.types.ids import CommandId, InstanceId, new_command_id
from skulk.shared.types.tasks import GenerationParams

# How often a queued request checks that its client is still there.
CLIENT_POLL_SECONDS = 0.25


@dataclass
class Submitted:
    """One attempt at a generation: its command, its stream and its first chunk."""

    command_id: CommandId
    stream: CommandStream
    first: Chunk


async def submit(context: ApiContext, params: GenerationParams,
                 excluded_instances: list[InstanceId] | None = None, *,
                 bounded: bool = False,
                 client_gone: Callable[[], Awaitable[bool]] | None = None) -> Submitted:
    """Send the generation and wait for its first chunk (which may be an error).

    `bounded`: the master refuses it (`overloaded`) when every instance is full. While
    it waits for its first chunk, a request still queued after the queue deadline is
    refused (503), and one whose client went away is cancelled at once (499)."""
    command_id = new_command_id()
    stream = context.requests.streams.open(command_id)  # before the command: no chunk is missed
    command = TextGeneration(command_id=command_id, owner_node=context.cluster.node_id,
                             params=params,
                             excluded_instances=excluded_instances or [], bounded=bounded,
                             max_queue=context.settings.max_queue if bounded else None)
    try:
        await context.requests.commands.send(command)  # a refusal here raises as it is
        first = await _first_chunk(context, command, stream, client_gone)
    except BaseException:
        await release(context, command_id, cancel=True)
        raise
    if isinstance(first, ApiError):
        await release(context, command_id, cancel=True)
        raise first
    return Submitted(command_id, stream, first)


async def _first_chunk(context: ApiContext, command: TextGeneration, stream: CommandStream,
                       client_gone: Callable[[], Awaitable[bool]] | None) -> Chunk | ApiError:
    """The stream's first chunk, or why the request ends without one. While it waits, in
    this one coroutine (no helper tasks to start and cancel on the way to the first
    token): the command is sent again every `COMMAND_RESEND_SECONDS` until the master
    acted on it; at the queue deadline a task not yet running is refused; the client is
    asked every `CLIENT_POLL_SECONDS` whether it is still there."""
    now = anyio.current_time()
    resend_at = now + COMMAND_RESEND_SECONDS
    deadline = now + context.settings.queue_timeout_seconds
    poll_at = now + CLIENT_POLL_SECONDS if client_gone is not None else math.inf
    while True:
        with anyio.move_on_after(min(resend_at, deadline, poll_at) - anyio.current_time()):
            return await stream.next_chunk()  # a chunk that arrives meanwhile stays queued
        now = anyio.current_time()
        task = context.cluster.replica.state.task_for_command(command.command_id)
        if now >= resend_at:
            resend_at = math.inf if task is not None else now + COMMAND_RESEND_SECONDS
            if task is None:
                await context.requests.commands.send(command)
        if now >= deadline:
            if task is None or task.status == "pending":
                return _queue_timeout(context)
            deadline = math.inf  # running: a long prompt may take a while to its first token
        if client_gone is not None and now >= poll_at:
            if await client_gone():
                return ApiError(499, "the client went away", code="client_disconnected")
            poll_at = anyio.current_time() + CLIENT_POLL_SECONDS


def _queue_timeout(context: ApiContext) -> ApiError:
    return ApiError(
        503, f"the request waited {context.settings.queue_timeout_seconds:.0f} s in the queue "
        "without starting; the model is busy, retry later or place another instance",
        type="server_error", code="queue_timeout")


async def release(context: ApiContext, command_id: CommandId, cancel: bool) -> None:
    """Close the stream, cancel the task if asked, and let the master forget it."""
    with anyio.CancelScope(shield=True):
        context.requests.streams.close(command_id)
        if cancel:
            await context.requests.commands.send(CancelTask(command_id=new_command_id(),
                                                  target_command_id=command_id))
        await context.requests.commands.send(TaskFinished(command_id=new_command_id(),
                                                target_command_id=command_id))
