"""Handing one generation to the cluster and letting go of it: the stream is registered
before the command is sent (so no chunk is missed), and released exactly once."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.resend import resend_until
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
    refusal: list[ApiError] = []
    try:
        await context.requests.commands.send(command)  # a refusal here raises as it is
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(resend_until, context, command,
                             lambda s: s.task_for_command(command_id) is not None)
            tasks.start_soon(_queue_deadline, context, command_id, refusal, tasks.cancel_scope)
            if client_gone is not None:
                tasks.start_soon(_watch_client, client_gone, refusal, tasks.cancel_scope)
            first = await stream.next_chunk()
            tasks.cancel_scope.cancel()
    except BaseException:
        await release(context, command_id, cancel=True)
        raise
    if refusal:
        await release(context, command_id, cancel=True)
        raise refusal[0]
    return Submitted(command_id, stream, first)


async def _queue_deadline(context: ApiContext, command_id: CommandId, refusal: list[ApiError],
                          scope: anyio.CancelScope) -> None:
    """Refuse the request if its task has not started running by the queue deadline."""
    await anyio.sleep(context.settings.queue_timeout_seconds)
    task = context.cluster.replica.state.task_for_command(command_id)
    if task is not None and task.status != "pending":
        return  # running (a long prompt may take a while to its first token)
    refusal.append(ApiError(
        503, f"the request waited {context.settings.queue_timeout_seconds:.0f} s in the queue "
        "without starting; the model is busy, retry later or place another instance",
        type="server_error", code="queue_timeout"))
    scope.cancel()


async def _watch_client(client_gone: Callable[[], Awaitable[bool]], refusal: list[ApiError],
                        scope: anyio.CancelScope) -> None:
    while not await client_gone():
        await anyio.sleep(CLIENT_POLL_SECONDS)
    refusal.append(ApiError(499, "the client went away", code="client_disconnected"))
    scope.cancel()


async def release(context: ApiContext, command_id: CommandId, cancel: bool) -> None:
    """Close the stream, cancel the task if asked, and let the master forget it."""
    with anyio.CancelScope(shield=True):
        context.requests.streams.close(command_id)
        if cancel:
            await context.requests.commands.send(CancelTask(command_id=new_command_id(),
                                                  target_command_id=command_id))
        await context.requests.commands.send(TaskFinished(command_id=new_command_id(),
                                                target_command_id=command_id))
