"""Open request streams on an API node: data-plane chunks in, ordered chunks out.

A stream is registered before its command is sent, so no early chunk can be missed.
"""

import math

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from skulk.api.reorder import ReorderBuffer
from skulk.shared.types.chunks import Chunk, DataChunk, ErrorChunk, TokenChunk, is_terminal
from skulk.shared.types.ids import CommandId

# Once the first token arrived, this much producer silence ends the stream with an error.
# Time to first token is not bounded here: a request may queue behind others.
DEFAULT_IDLE_TIMEOUT_SECONDS = 60.0


class CommandStream:
    """The receiving end of one request's output."""

    def __init__(
        self,
        command_id: CommandId,
        receive: MemoryObjectReceiveStream[Chunk],
        idle_timeout: float,
    ) -> None:
        self.command_id = command_id
        self._receive = receive
        self._idle_timeout = idle_timeout
        self._first_token_seen = False
        self.finished = False

    async def next_chunk(self) -> Chunk:
        """The next chunk; after a terminal chunk the stream is finished."""
        if self.finished:
            raise RuntimeError(f"stream {self.command_id} already ended")
        try:  # a chunk already waiting needs no timer (the common case under load)
            chunk = self._receive.receive_nowait()
        except anyio.WouldBlock:
            waited = await self._wait()
            if waited is None:
                self.finished = True
                return ErrorChunk(
                    error_kind="timeout",
                    message=f"the model produced nothing for {self._idle_timeout:.0f} s; "
                            "the request was abandoned, retry it")
            chunk = waited
        if isinstance(chunk, TokenChunk):
            self._first_token_seen = True
        self.finished = is_terminal(chunk)
        return chunk

    async def _wait(self) -> Chunk | None:
        """The next chunk, or None after the idle timeout (none before the first token)."""
        if not self._first_token_seen:
            return await self._receive.receive()
        with anyio.move_on_after(self._idle_timeout):
            return await self._receive.receive()
        return None

    def __aiter__(self) -> "CommandStream":
        return self

    async def __anext__(self) -> Chunk:
        if self.finished:
            raise StopAsyncIteration
        return await self.next_chunk()


class _OpenStream:
    def __init__(self, send: MemoryObjectSendStream[Chunk]) -> None:
        self.send = send
        self.order: ReorderBuffer[Chunk] = ReorderBuffer()


class StreamRegistry:
    """Routes data-plane chunks and control-plane failures to open request streams."""

    def __init__(self, idle_timeout: float = DEFAULT_IDLE_TIMEOUT_SECONDS) -> None:
        self._open: dict[CommandId, _OpenStream] = {}
        self._idle_timeout = idle_timeout

    def open(self, command_id: CommandId) -> CommandStream:
        send, receive = anyio.create_memory_object_stream[Chunk](math.inf)
        self._open[command_id] = _OpenStream(send)
        return CommandStream(command_id, receive, self._idle_timeout)

    def is_open(self, command_id: CommandId) -> bool:
        return command_id in self._open

    def dispatch(self, data: DataChunk) -> None:
        """Deliver a data-plane chunk; chunks of closed or unknown streams are dropped."""
        stream = self._open.get(data.command_id)
        if stream is None:
            return
        for chunk in stream.order.push(data.sequence, data.chunk):
            stream.send.send_nowait(chunk)

    def fail(self, command_id: CommandId, error: ErrorChunk) -> None:
        """End an open stream with an error from the control plane."""
        stream = self._open.get(command_id)
        if stream is not None:
            stream.send.send_nowait(error)

    def close(self, command_id: CommandId) -> None:
        stream = self._open.pop(command_id, None)
        if stream is not None:
            stream.send.close()

    def open_commands(self) -> list[CommandId]:
        return list(self._open)
