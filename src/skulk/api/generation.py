"""One generation, opened the same way for every dialect.

A router parses its request with its dialect's adapter into `GenerationParams`, then calls
`open_generation`: the model is made to serve, the stream is registered before the command
is sent (so no chunk is missed), and the call returns once the first chunk is in. The
generation is then read through `consume`, which always ends it with `finish_generation`.

When the instance serving it fails, the generation fails over (`failover.py`): it goes
on as a continuation on another instance, under a new command, and its chunks go on as if
nothing happened. `command_id` stays the one the client was told.
"""

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.failover import Failover
from skulk.api.held_writes import HeldWrites
from skulk.api.serving import ensure_serving
from skulk.api.streams import CommandStream
from skulk.api.submit import Submitted, release, submit
from skulk.api.token_cap import capped
from skulk.api.tracing import RequestTrace, now_us
from skulk.shared.types.chunks import Chunk, ErrorChunk, TokenChunk, is_terminal
from skulk.shared.types.ids import CommandId
from skulk.shared.types.tasks import GenerationParams


@dataclass
class Generation:
    """One running generation: the attempt now serving it and its first chunk."""

    context: ApiContext
    command_id: CommandId  # the first attempt's, as announced to the client
    attempt: Submitted
    first: Chunk
    created: int
    failover: Failover | None = None
    done: bool = False
    trace: RequestTrace | None = None
    released: bool = False
    # A streamed response's first bytes, held until its first token's are written too.
    held: HeldWrites | None = None

    @property
    def stream(self) -> CommandStream:
        return self.attempt.stream

    @property
    def current_command_id(self) -> CommandId:
        """The command of the attempt now serving (another one after a failover)."""
        return self.attempt.command_id

    async def chunks(self) -> AsyncIterator[Chunk]:
        chunk = self.first
        while True:  # consume.token_chunks runs the same loop inline
            if type(chunk) is ErrorChunk:  # a token needs no recovering (nor a coroutine)
                chunk = await self.recovered(chunk)
            chunk = self.delivered(chunk)
            yield chunk
            if is_terminal(chunk):
                return
            chunk = await self.attempt.stream.next_chunk()

    def delivered(self, chunk: Chunk) -> Chunk:
        """The chunk as the client gets it (after a failover, counted as if one instance
        had generated everything)."""
        if type(chunk) is TokenChunk and self.failover is not None:
            return self.failover.continuation.deliver(chunk)
        return chunk

    async def recovered(self, chunk: Chunk) -> Chunk:
        """The chunk, or, when it is an error another instance can get past, the first
        chunk from the instance that took over."""
        failover = self.failover
        while isinstance(chunk, ErrorChunk) and failover is not None:
            if not failover.should_retry(chunk):
                return failover.give_up(chunk)
            outcome = await failover.resume(self.attempt.command_id, chunk)
            if self.trace is not None:
                self.trace.spans.append(failover.spans[-1])
            if not isinstance(outcome, Submitted):
                return outcome
            self.attempt = outcome
            failover.context.requests.command_aliases[self.command_id] = outcome.command_id
            chunk = outcome.first
        return chunk


async def open_generation(context: ApiContext, params: GenerationParams,
                          request: Request | None = None) -> Generation:
    """Make sure the model serves, then start generating (traced when tracing is on).

    An error as the first chunk raises (after any failover), so the client gets a real
    HTTP error status even when it asked for a stream: 429 with `Retry-After` when every
    instance's queue is full. With `request`, a client that goes away while the request
    is queued cancels it at once.
    """
    started, started_us = time.monotonic(), now_us()
    params = capped(params, context.settings.max_tokens)
    tracing = context.requests.traces.enabled
    await ensure_serving(context, params.model_id)
    serving_us = now_us()
    generation = await _start(
        context, params.model_copy(update={"trace": True}) if tracing else params,
        None if request is None else request.is_disconnected)
    task = context.cluster.replica.state.task_for_command(generation.current_command_id)
    context.operations.metrics.observe_first_token(task.instance_id if task else "unknown",
                                                   time.monotonic() - started)
    if tracing:
        trace = RequestTrace(generation.command_id, params.model_id, context.cluster.node_id,
                             started_us=started_us)
        trace.span("api.ensure_serving", started_us, serving_us)
        trace.span("api.wait_first_chunk", serving_us)
        if generation.failover is not None:
            trace.spans += generation.failover.spans
        generation.trace = context.requests.traces.begin(trace)
    return generation


async def _start(context: ApiContext, params: GenerationParams,
                 client_gone: Callable[[], Awaitable[bool]] | None) -> Generation:
    """Send the generation and wait for its first chunk, failing over if it fails."""
    attempt = await submit(context, params, bounded=True, client_gone=client_gone)
    generation = Generation(context, attempt.command_id, attempt, attempt.first,
                            int(time.time()), failover=Failover(context, params))
    try:
        generation.first = await generation.recovered(attempt.first)
    except BaseException:
        await finish_generation(context, generation)
        raise
    if isinstance(generation.first, ErrorChunk):
        generation.done = True
        await finish_generation(context, generation)
        raise ApiError.from_chunk(generation.first)
    return generation


async def finish_generation(context: ApiContext, generation: Generation) -> None:
    """Always called, maybe twice (the body's end and the response's): cancels an
    unfinished generation, then lets the master forget it, once."""
    if generation.released:
        return
    generation.released = True
    if generation.trace is not None:
        generation.trace.end("abandoned")  # unless its final chunk ended it already
    context.requests.command_aliases.pop(generation.command_id, None)
    await release(context, generation.current_command_id,
                  cancel=not generation.done and not generation.stream.finished)
