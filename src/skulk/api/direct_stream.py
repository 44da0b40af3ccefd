"""A streamed reply's plain tokens written by the native relay, not the event loop.

Once the reply's head and first tokens are out through the Python path, `DirectOffer`
hands the client's socket to the relay that reads the serving runner's pipe (on this
node, `skulk.worker.runner.direct_streams`): each plain token then leaves as the same
server-sent event the Python path writes (`TextEvent`'s bytes around the text, in one
HTTP/1.1 chunk), with no wake of the node's Python. The stream waits meanwhile for what
only Python writes (the last chunk with its ending and usage, an error), and takes the
socket back before writing it: the end of an event the socket took only in part, then the
text the relay could not send (one delta), then that chunk. What the relay delivered is
counted as if Python had (the tokens a failover resumes after, the gaps between tokens).

Anything unusual keeps the Python path: a response whose bytes wait in the transport, a
reader that is behind, a runner without a relay, a connection not served by uvicorn's
HTTP/1.1 over plain TCP.
"""

from skulk.api.connection import Connection
from skulk.api.context import ApiContext
from skulk.api.generation import Generation
from skulk.api.text_event import TextEvent
from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import TaskId
from skulk.worker.runner import direct_streams
from skulk.worker.runner.coalesce import plain_token_chunk

# A stream tries at every token this many times: a refusal mostly means a token was still
# on its way through Python (or the client had not read the last one yet), which the next
# token settles. After that it tries again after 2, 4, ... up to `_MOST_SKIPPED` tokens, so
# that a stream refused for a while (a loaded machine, a slow reader) still goes direct
# later, and one that never can costs a check every 64 tokens.
_TRIES = 8
_MOST_SKIPPED = 64


def direct_offer(context: ApiContext, connection: Connection | None, generation: Generation,
                 event: TextEvent) -> "DirectOffer | None":
    """A stream's way to the relay, its tokens rendered as `event` (None: the node's
    relay is off, or the connection is not one the relay may write to)."""
    direct = context.requests.direct
    if connection is None or direct is None:
        return None
    return DirectOffer(direct, connection, event.head, event.tail, generation)


def first_token_out(context: ApiContext, generation: Generation) -> None:
    """Tell the request's runner on this node that its first token went out (it may be
    waiting for that: `worker/runner/first_token_pause.py`). A stream calls this once the
    response's first bytes, held until its first token's were written (`held_writes`),
    have been released to the socket."""
    streams = context.requests.direct
    if streams is None:
        return
    task_id = _task_now(generation)
    if task_id is not None:
        streams.first_token_out(task_id)


def _task_now(generation: Generation) -> TaskId | None:
    """The task serving the generation's current command, as this node's State has it."""
    task = generation.context.cluster.replica.state.task_for_command(
        generation.current_command_id)
    return None if task is None else task.task_id


class DirectOffer:
    """One streamed reply's way to the relay: its connection and its event's bytes
    around the text."""

    __slots__ = ("_streams", "_connection", "_head", "_tail", "_generation", "_refusals",
                 "_backoff", "_skip", "_task", "direct")

    def __init__(self, streams: direct_streams.DirectStreams, connection: Connection,
                 head: bytes, tail: bytes, generation: Generation) -> None:
        self._streams = streams
        self._connection = connection
        self._head = head
        self._tail = tail
        self._generation = generation
        self._refusals = 0
        self._backoff = 1
        self._skip = 0  # tokens to let pass before the next try
        self._task: tuple[str, TaskId] | None = None  # (command, its task) looked up once
        self.direct: direct_streams.DirectStream | None = None

    def start(self) -> bool:
        """Make the stream direct if it can be now: called after a plain token's event
        went to the transport, before waiting for the next chunk."""
        if self._skip:
            self._skip -= 1
            return False
        if self._go_direct():
            return True
        self._refusals += 1
        if self._refusals >= _TRIES:
            self._backoff = self._skip = min(self._backoff * 2, _MOST_SKIPPED)
        return False

    def _go_direct(self) -> bool:
        connection = self._connection
        transport = connection.transport
        if connection.flow.write_paused or connection.disconnected \
                or not connection.chunked_encoding or transport.is_closing() \
                or transport.get_write_buffer_size():
            return False
        generation = self._generation
        stream = generation.attempt.stream
        task_id = self._task_of(generation)
        if task_id is None or not stream.idle:
            return False
        socket = transport.get_extra_info("socket")
        if socket is None:
            return False
        self.direct = self._streams.go_direct(task_id, socket.fileno(), self._head,
                                              self._tail)
        if self.direct is None:
            return False
        stream.progress = self.direct.heard_at
        return True

    def _task_of(self, generation: Generation) -> TaskId | None:
        command_id = generation.current_command_id
        if self._task is None or self._task[0] != command_id:
            task_id = _task_now(generation)
            if task_id is None:
                return None
            self._task = (command_id, task_id)
        return self._task[1]

    def take_back(self) -> tuple[list[float], TokenChunk | None]:
        """End the direct writing: the end of a partly sent event goes to the transport
        now; returns the gaps between the tokens the relay wrote (s), and the tokens it
        could not send as one chunk (None if none). What it delivered counts as delivered."""
        direct, self.direct = self.direct, None
        if direct is None:
            return [], None
        self._generation.attempt.stream.progress = None
        back = direct.take_back()
        if back is None:
            return [], None
        if back.unsent:
            self._connection.transport.write(back.unsent)
        if back.written_tokens:
            self._generation.delivered(plain_token_chunk("", back.written_tokens))
            self._generation.context.operations.metrics.native_stream_tokens.inc(
                len(back.written_tokens))
        pending = None
        if back.pending_text or back.pending_tokens:
            pending = plain_token_chunk(back.pending_text, back.pending_tokens)
        return back.gaps, pending
