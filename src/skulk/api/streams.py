"""Open request streams on an API node: data-plane chunks in, ordered chunks out.

A stream is registered before its command is sent, so no early chunk can be missed.

Each chunk of every streamed request passes through here, so waiting for one is kept
cheap: an asyncio future per wait and one idle timer per stream, not an anyio memory
stream and a cancel scope (which cost the node CPU the runner's compute threads need, per
token), nor a timer set and cancelled per chunk.
A reader that falls behind takes the token chunks that piled up as one (one delta in its
dialect, one wake-up), not a growing queue of events: text, tokens, log probabilities and
the last chunk's ending are the same as read one by one.
"""

import asyncio
import time
from collections import deque
from collections.abc import Callable
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
    """One stream's chunks in arrival order, and the one reader waiting for them.

    The reader's idle limit is one timer per stream, not one per chunk: a wait notes
    when it began, and the timer, when it fires, wakes the reader only if the wait it
    finds is older than the limit (else it is set again for what is left of it)."""

    __slots__ = ("_chunks", "_waiter", "_waiting_since", "_timeout", "_timer", "_loop",
                 "closed")

    def __init__(self) -> None:
        self._chunks: deque[Chunk] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._waiting_since = 0.0  # loop time
        self._timeout: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def put(self, chunk: Chunk) -> None:
        self._chunks.append(chunk)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        self.closed = True
        self._wake()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _on_timer(self) -> None:
        """Wake a reader that has waited `timeout` or more; set the timer again for one
        that waited less; with no reader waiting, stop (the next wait sets it again)."""
        self._timer = None
        loop, timeout = self._loop, self._timeout
        if self._waiter is None or loop is None or timeout is None:
            return
        left = self._waiting_since + timeout - loop.time()
        if left <= 0.001:  # the timer's own granularity
            self._wake()
        else:
            self._timer = loop.call_later(left, self._on_timer)

    @property
    def empty(self) -> bool:
        """No chunk waits (and the inbox is open)."""
        return not self._chunks and not self.closed

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

    def waiter(self, timeout: float | None) -> "asyncio.Future[None]":
        """What the one reader awaits (then `stop_waiting`) when `take_nowait` had
        nothing: done by a chunk, the close, or `timeout` seconds (None: no limit)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        self._timeout = timeout
        if timeout is not None:
            self._waiting_since = loop.time()
            if self._timer is None:
                self._timer = loop.call_later(timeout, self._on_timer)
        return waiter

    def stop_waiting(self) -> None:
        self._waiter = None


class CommandStream:
    """The receiving end of one request's output."""

    def __init__(self, command_id: CommandId, inbox: ChunkInbox, idle_timeout: float) -> None:
        self.command_id = command_id
        self._inbox = inbox
        self._idle_timeout = idle_timeout
        self._first_token_seen = False
        self.finished = False
        # While the native relay writes this stream's tokens (direct_stream), none come
        # here: its runner's last output (monotonic s) is what the idle limit measures.
        self.progress: Callable[[], float] | None = None

    @property
    def idle(self) -> bool:
        """No chunk is waiting to be read."""
        return self._inbox.empty

    async def next_chunk(self) -> Chunk:
        """The next chunk; after a terminal chunk the stream is finished. Once the first
        token came, `idle_timeout` seconds without a chunk end the stream with an error
        (none before it: a request may queue behind others)."""
        if self.finished:
            raise RuntimeError(f"stream {self.command_id} already ended")
        inbox = self._inbox
        chunk = inbox.take_nowait()
        while chunk is None:  # `inbox.take`, inline: one coroutine less per token
            try:
                await inbox.waiter(self._idle_timeout if self._first_token_seen else None)
            finally:
                inbox.stop_waiting()
            chunk = inbox.take_nowait()
            if chunk is not None or not self._progressed():
                break
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

    def _progressed(self) -> bool:
        """The relay wrote this stream's tokens within the idle limit."""
        progress = self.progress
        return progress is not None and time.monotonic() - progress() < self._idle_timeout

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
