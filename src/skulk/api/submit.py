"""Handing one generation to the cluster and letting go of it: the stream is registered
before the command is sent (so no chunk is missed), and released exactly once."""

from dataclasses import dataclass

import anyio

from skulk.api.context import ApiContext
from skulk.api.resend import resend_until
from skulk.api.streams import CommandStream
from skulk.shared.types.chunks import Chunk
from skulk.shared.types.commands import CancelTask, TaskFinished, TextGeneration
from skulk.shared.types.ids import CommandId, InstanceId, new_command_id
from skulk.shared.types.tasks import GenerationParams


@dataclass
class Submitted:
    """One attempt at a generation: its command, its stream and its first chunk."""

    command_id: CommandId
    stream: CommandStream
    first: Chunk


async def submit(context: ApiContext, params: GenerationParams,
                 excluded_instances: list[InstanceId] | None = None) -> Submitted:
    """Send the generation and wait for its first chunk (which may be an error)."""
    command_id = new_command_id()
    stream = context.streams.open(command_id)  # before the command: no chunk is missed
    command = TextGeneration(command_id=command_id, owner_node=context.node_id, params=params,
                             excluded_instances=excluded_instances or [])
    try:
        await context.send_command(command)  # a refusal here raises as it is
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(resend_until, context, command,
                             lambda s: s.task_for_command(command_id) is not None)
            first = await stream.next_chunk()
            tasks.cancel_scope.cancel()
    except BaseException:
        await release(context, command_id, cancel=True)
        raise
    return Submitted(command_id, stream, first)


async def release(context: ApiContext, command_id: CommandId, cancel: bool) -> None:
    """Close the stream, cancel the task if asked, and let the master forget it."""
    with anyio.CancelScope(shield=True):
        context.streams.close(command_id)
        if cancel:
            await context.send_command(CancelTask(command_id=new_command_id(),
                                                  target_command_id=command_id))
        await context.send_command(TaskFinished(command_id=new_command_id(),
                                                target_command_id=command_id))
