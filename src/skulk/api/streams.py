"""Open request streams on an API node: data-plane chunks in, ordered chunks out.

A stream is registered before its command is sent, so no early chunk can be missed.

Each chunk of every streamed request passes through here, so waiting for one is kept
cheap: an asyncio future per wait and a timer handle, not an anyio memory stream and a
cancel scope (which cost the node CPU the runner's compute threads need, per token).
A reader that falls behind takes the token chunks that piled up as one (one delta in its
dialect, one wake-up), not a growing queue of events: text, tokens, log probabilities and
the last chunk's ending are the same as read one by one.
"""

import asyncio
from collections import deque
from typing import cast

import anyio

from skulk.api.reorder import ReorderBuffer
from skulk.shared.types.chunks import Chunk, DataChunk, ErrorChunk, TokenChunk, is_terminal
from skulk.shared.types.ids import CommandId
from skulk.worker.runner.coalesce import mergeable, merged_run

# Once the first token arrived, this much producer silence ends the stream with an error.
# Time to first token is not bounded here: a request may queue behind others.
DEFAULT_IDLE_TIMEOUT_SECONDS = 60.0


class ChunkInbox:
    """One stream's chunks in arrival order, and the one reader waiting for them."""

    __slots__ = ("_chunks", "_waiter", "closed")

    def __init__(self) -> None:
        self._chunks: deque[Chunk] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False

    def put(self, chunk: Chunk) -> None:
        self._chunks.append(chunk)
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take_nowait(self) -> Chunk | None:
        """The oldest chunk, with the token chunks queued behind it merged in; None when
        there is none (`anyio.EndOfStream` once closed)."""
        chunks = self._chunks
        if chunks:
            chunk = chunks.popleft()
            if not chunks or not isinstance(chunk, TokenChunk) or not mergeable(chunk):
                return chunk
            run = [chunk]
            while chunks and isinstance(chunks[0], TokenChunk) and mergeable(run[-1]):
                run.append(cast(TokenChunk, chunks.popleft()))
            return merged_run(run) if len(run) > 1 else chunk
        if self.closed:
            raise anyio.EndOfStream
        return None

    async def take(self, timeout: float | None) -> Chunk | None:
        """The oldest chunk, waiting for one at most `timeout` seconds (None: no limit);
        None when the time ran out."""
        chunk = self.take_nowait()
        if chunk is not None:
            return chunk
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, self._wake)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
        return self.take_nowait()


class CommandStream:
    """The receiving end of one request's output."""

    def __init__(self, command_id: CommandId, inbox: ChunkInbox, idle_timeout: float) -> None:
        self.command_id = command_id
        self._inbox = inbox
        self._idle_timeout = idle_timeout
        self._first_token_seen = False
        self.finished = False

    async def next_chunk(self) -> Chunk:
        """The next chunk; after a terminal chunk the stream is finished. Once the first
        token came, `idle_timeout` seconds without a chunk end the stream with an error
        (none before it: a request may queue behind others)."""
        if self.finished:
            raise RuntimeError(f"stream {self.command_id} already ended")
        chunk = await self._inbox.take(self._idle_timeout if self._first_token_seen else None)
        if chunk is None:
            self.finished = True
            return ErrorChunk(
                error_kind="timeout",
                message=f"the model produced nothing for {self._idle_timeout:.0f} s; "
                        "the request was abandoned, retry it")
        if isinstance(chunk, TokenChunk):
            self._first_token_seen = True
        self.finished = is_terminal(chunk)
        return chunk

    def __aiter__(self) -> "CommandStream":
        return self

    async def __anext__(self) -> Chunk:
        if self.finished:
            raise StopAsyncIteration
        return await self.next_chunk()


class _OpenStream:
    def __init__(self, inbox: ChunkInbox) -> None:
        self.inbox = inbox
        self.order: ReorderBuffer[Chunk] = ReorderBuffer()


class StreamRegistry:
    """Routes data-plane chunks and control-plane failures to open request streams."""

    def __init__(self, idle_timeout: float = DEFAULT_IDLE_TIMEOUT_SECONDS) -> None:
        self._open: dict[CommandId, _OpenStream] = {}
        self._idle_timeout = idle_timeout

    def open(self, command_id: CommandId) -> CommandStream:
        inbox = ChunkInbox()
        self._open[command_id] = _OpenStream(inbox)
        return CommandStream(command_id, inbox, self._idle_timeout)

    def is_open(self, command_id: CommandId) -> bool:
        return command_id in self._open

    def dispatch(self, data: DataChunk) -> None:
        """Deliver a data-plane chunk; chunks of closed or unknown streams are dropped."""
        stream = self._open.get(data.command_id)
        if stream is None:
            return
        for chunk in stream.order.push(data.sequence, data.chunk):
            stream.inbox.put(chunk)

    def fail(self, command_id: CommandId, error: ErrorChunk) -> None:
        """End an open stream with an error from the control plane."""
        stream = self._open.get(command_id)
        if stream is not None:
            stream.inbox.put(error)

    def close(self, command_id: CommandId) -> None:
        stream = self._open.pop(command_id, None)
        if stream is not None:
            stream.inbox.close()

    def open_commands(self) -> list[CommandId]:
        return list(self._open)
