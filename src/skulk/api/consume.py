"""Reading an open generation for any dialect: whole, or chunk by chunk.

After `open_generation`, a router either `collect`s the completion (non-streaming) or
iterates `token_chunks` inside its dialect's stream formatter, sent with `event_stream`.
Both always end the generation (cancelling it if unfinished), count its tokens and timings,
and turn an error chunk into an `ApiError` for the dialect to render.
"""

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
from fastapi import Request
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from skulk.api.connection import connection_of
from skulk.api.context import ApiContext
from skulk.api.direct_stream import DirectOffer, first_token_out
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, finish_generation
from skulk.api.held_writes import hold_writes
from skulk.api.tracing import now_us
from skulk.shared.types.chunks import (
    Chunk,
    ErrorChunk,
    FinishReason,
    TokenChunk,
    TokenLogprob,
    Usage,
)
from skulk.worker.runner.coalesce import merged

DISCONNECT_POLL_SECONDS = 0.5
COMMAND_ID_HEADER = "X-Skulk-Command-Id"


@dataclass
class Completion:
    """A generation read whole."""

    text: str
    finish_reason: FinishReason | None
    usage: Usage | None
    stop_sequence: str | None = None
    embeddings: list[list[float]] | None = None
    logprobs: list[TokenLogprob] = field(default_factory=list)


# Gaps between chunks wait in the stream for this many, then go into the histogram at
# once: observed one by one they were Python calls and locks on every token's wake.
GAPS_PER_OBSERVE = 16


class _Measure:
    """A generation's chunks as they pass: the gaps between them, the tokens counted, and
    the trace ended with its last chunk. Called per chunk from the loop that reads them
    (an async generator of its own was one more layer to pass through per token)."""

    __slots__ = ("_context", "_generation", "_last", "_gaps", "_streaming_from")

    def __init__(self, context: ApiContext, generation: Generation) -> None:
        self._context = context
        self._generation = generation
        self._last = time.monotonic()
        self._gaps: list[float] = []
        self._streaming_from = now_us()

    def saw(self, chunk: Chunk) -> None:
        now = time.monotonic()
        gaps = self._gaps
        gaps.append(now - self._last)
        self._last = now
        if len(gaps) >= GAPS_PER_OBSERVE:
            self.flush()
        if type(chunk) is TokenChunk:
            if chunk.usage is None and chunk.finish_reason is None:
                return  # a plain token: nothing else to note
            if chunk.usage is not None:
                self.flush()
                context, generation = self._context, self._generation
                task = context.cluster.replica.state.task_for_command(
                    generation.current_command_id)
                instance = task.instance_id if task else "unknown"
                context.operations.metrics.count_tokens(instance, chunk.usage.completion_tokens)
                context.operations.metrics.count_speculation(instance, chunk.usage)
        trace = self._generation.trace
        if trace is not None and isinstance(chunk, TokenChunk) and chunk.finish_reason:
            trace.spans += chunk.spans
            trace.tokens = chunk.usage.completion_tokens if chunk.usage else 0
            trace.span("api.stream", self._streaming_from)
            trace.end(chunk.finish_reason)
        elif trace is not None and isinstance(chunk, ErrorChunk):  # a failure or a stop
            trace.span("api.stream", self._streaming_from)
            trace.end(f"error: {chunk.error_kind}")

    def saw_gaps(self, gaps: list[float]) -> None:
        """Gaps between tokens the native relay wrote (`direct_stream`)."""
        self._gaps += gaps
        self._last = time.monotonic()
        if len(self._gaps) >= GAPS_PER_OBSERVE:
            self.flush()

    def flush(self) -> None:
        """The gaps noted so far into the histogram."""
        gaps, self._gaps = self._gaps, []
        observe = self._context.operations.metrics.inter_token.observe
        for gap in gaps:
            observe(gap)


def announce(generation: Generation) -> dict[str, str]:
    """Response headers that let a client cancel: POST /v1/cancel/{command id}."""
    return {COMMAND_ID_HEADER: generation.command_id}


async def collect(context: ApiContext, generation: Generation, request: Request,
                  token_ids: list[int] | None = None) -> Completion | None:
    """The whole completion, or None when the client went away first (it is cancelled).
    The generated token ids are appended to `token_ids` when given."""
    parts: list[str] = []
    finish: FinishReason | None = None
    usage: Usage | None = None
    stop_sequence: str | None = None
    embeddings: list[list[float]] | None = None
    logprobs: list[TokenLogprob] = []
    measure = _Measure(context, generation)
    try:
        async with anyio.create_task_group() as tasks:
            async def cancel_on_disconnect() -> None:
                while not await request.is_disconnected():
                    await anyio.sleep(DISCONNECT_POLL_SECONDS)
                tasks.cancel_scope.cancel()

            tasks.start_soon(cancel_on_disconnect)
            async for chunk in generation.chunks():
                measure.saw(chunk)
                if isinstance(chunk, ErrorChunk):
                    raise ApiError.from_chunk(chunk)
                if not parts:  # nothing to write before the end: the runner steps on
                    first_token_out(context, generation)
                parts.append(chunk.text)
                if token_ids is not None:
                    token_ids += chunk.token_ids
                finish, usage = chunk.finish_reason, chunk.usage or usage
                stop_sequence = chunk.stop_sequence or stop_sequence
                embeddings = chunk.embeddings or embeddings
                logprobs += chunk.logprobs
            generation.done = True
            tasks.cancel_scope.cancel()
    finally:
        measure.flush()
        await finish_generation(context, generation)
    if not generation.done:
        return None
    return Completion("".join(parts), finish, usage, stop_sequence, embeddings, logprobs)


async def token_chunks(context: ApiContext, generation: Generation,
                       direct: DirectOffer | None = None) -> AsyncIterator[TokenChunk]:
    """The token chunks as they come; an error chunk raises `ApiError` (the stream's
    formatter writes it in its dialect). A client that goes away cancels the generation.
    With `direct`, the plain tokens after the first may be written by the native relay
    instead (`direct_stream`): only the chunks it leaves to Python come out here. Once the
    first has gone to the transport, the response's held first bytes leave (`held_writes`)
    and the runner hears so (`first_token_out`)."""
    measure = _Measure(context, generation)
    held: Chunk | None = None  # the chunk that came after the relay's unsent text
    first = True
    try:
        chunk = generation.first
        while True:  # `Generation.chunks`, inline: one async generator less per token
            if type(chunk) is ErrorChunk:
                chunk = await generation.recovered(chunk)
            chunk = generation.delivered(chunk)
            measure.saw(chunk)
            if type(chunk) is ErrorChunk:
                raise ApiError.from_chunk(chunk)
            assert isinstance(chunk, TokenChunk)
            if chunk.finish_reason is not None:
                generation.done = True
                yield chunk
                return
            yield chunk
            if first:  # its events are written: out they go, and its runner hears so
                first = False
                if generation.held is not None:
                    generation.held.release()
                first_token_out(context, generation)
            if held is not None:
                chunk, held = held, None
            elif direct is not None and direct.start():
                chunk, held = await _after_direct(direct, generation, measure)
            else:
                chunk = await generation.attempt.stream.next_chunk()
    finally:
        if direct is not None:
            direct.take_back()
        measure.flush()
        await finish_generation(context, generation)


async def _after_direct(direct: DirectOffer, generation: Generation,
                        measure: _Measure) -> tuple[Chunk, Chunk | None]:
    """Wait, while the relay writes the plain tokens, for the next chunk Python writes;
    then take the stream back: the chunk, with the text the relay could not send before
    it (merged when it is a token chunk, else as a chunk of its own, first)."""
    try:
        chunk = await generation.attempt.stream.next_chunk()
    finally:
        gaps, pending = direct.take_back()
        measure.saw_gaps(gaps)
    if pending is None:
        return chunk, None
    if type(chunk) is TokenChunk:
        return merged(pending, chunk), None
    return pending, chunk


class GenerationResponse(StreamingResponse):
    """A streamed generation that ends it however the response ends: a client that goes
    away before the body is ever iterated leaves no task running and no stream open."""

    def __init__(self, generation: Generation, frames: AsyncIterator[bytes],
                 media_type: str) -> None:
        super().__init__(frames, media_type=media_type,
                         headers={"Cache-Control": "no-cache", **announce(generation)})
        self._generation = generation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream in this task, so the head and first token go out at once (Starlette
        streams from a task it starts, a turn of the event loop later, on ASGI before 2.4,
        which uvicorn speaks); a client that leaves still ends the stream at once."""
        failure: Exception | None = None
        self._generation.held = hold_writes(connection_of(scope))
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._end_when_gone, receive, tasks.cancel_scope)
                try:
                    await self.stream_response(send)
                except Exception as error:  # raised as it is, not in an exception group
                    failure = error
                tasks.cancel_scope.cancel()
            if failure is not None:
                raise failure
        finally:
            await finish_generation(self._generation.context, self._generation)

    async def _end_when_gone(self, receive: Receive, scope: anyio.CancelScope) -> None:
        await self.listen_for_disconnect(receive)
        scope.cancel()


def event_stream(generation: Generation, frames: AsyncIterator[bytes],
                 media_type: str = "text/event-stream") -> StreamingResponse:
    """A dialect's server-sent events (or other stream), announced with the generation's
    command id."""
    return GenerationResponse(generation, frames, media_type)


def sse(body: object) -> bytes:
    """One server-sent event carrying a JSON body, as the OpenAI dialects send it."""
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()


def client_gone() -> ApiError:
    return ApiError(499, "the client went away", code="client_disconnected")
