"""One generation, opened the same way for every dialect.

A router parses its request with its dialect's adapter into `GenerationParams`, then calls
`open_generation`: the model is made to serve, the stream is registered before the command
is sent (so no chunk is missed), and the call returns once the first chunk is in. The
generation is then read through `consume`, which always ends it with `finish_generation`.
"""

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.resend import resend_until
from skulk.api.serving import ensure_serving
from skulk.api.streams import CommandStream
from skulk.api.tracing import RequestTrace, now_us
from skulk.shared.types.chunks import Chunk, ErrorChunk
from skulk.shared.types.commands import CancelTask, TaskFinished, TextGeneration
from skulk.shared.types.ids import CommandId, new_command_id
from skulk.shared.types.tasks import GenerationParams


@dataclass
class Generation:
    """One running generation: its stream and the first chunk, already received."""

    command_id: CommandId
    stream: CommandStream
    first: Chunk
    created: int
    done: bool = False
    trace: RequestTrace | None = None

    async def chunks(self) -> AsyncIterator[Chunk]:
        yield self.first
        async for chunk in self.stream:
            yield chunk


async def open_generation(context: ApiContext, params: GenerationParams) -> Generation:
    """Make sure the model serves, then start generating (traced when tracing is on).

    An error as the first chunk raises, so the client gets a real HTTP error status even
    when it asked for a stream.
    """
    started, started_us = time.monotonic(), now_us()
    tracing = context.traces.enabled
    await ensure_serving(context, params.model_id)
    serving_us = now_us()
    generation = await _start(
        context, params.model_copy(update={"trace": True}) if tracing else params)
    context.metrics.time_to_first_token.observe(time.monotonic() - started)
    if tracing:
        trace = RequestTrace(generation.command_id, params.model_id, context.node_id,
                             started_us=started_us)
        trace.span("api.ensure_serving", started_us, serving_us)
        trace.span("api.wait_first_chunk", serving_us)
        generation.trace = context.traces.begin(trace)
    return generation


async def _start(context: ApiContext, params: GenerationParams) -> Generation:
    """Register the stream, send the command, and wait for the first chunk."""
    command_id = new_command_id()
    stream = context.streams.open(command_id)  # before the command: no chunk is missed
    generation = Generation(command_id, stream, ErrorChunk(error_kind="internal", message=""),
                            int(time.time()))
    command = TextGeneration(command_id=command_id, owner_node=context.node_id, params=params)
    try:
        await context.send_command(command)  # a refusal here raises as it is
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(resend_until, context, command,
                             lambda s: s.task_for_command(command_id) is not None)
            generation.first = await stream.next_chunk()
            tasks.cancel_scope.cancel()
    except BaseException:
        await finish_generation(context, generation)
        raise
    if isinstance(generation.first, ErrorChunk):
        generation.done = True
        await finish_generation(context, generation)
        raise ApiError.from_chunk(generation.first)
    return generation


async def finish_generation(context: ApiContext, generation: Generation) -> None:
    """Always called: cancels an unfinished generation, then lets the master forget it."""
    with anyio.CancelScope(shield=True):
        if generation.trace is not None:
            generation.trace.end("abandoned")  # unless its final chunk ended it already
        context.streams.close(generation.command_id)
        if not generation.done and not generation.stream.finished:
            await context.send_command(CancelTask(command_id=new_command_id(),
                                                  target_command_id=generation.command_id))
        await context.send_command(TaskFinished(command_id=new_command_id(),
                                                target_command_id=generation.command_id))
