"""A runner's messages to its supervisor as length-prefixed pickles on a plain pipe.

The runner writes each step's messages itself, in one `os.write`, before its next compute
step: no feeder thread wakes up while the compute threads run, as it did under
`multiprocessing.Queue`. The supervisor reads whatever is there in one `os.read` on the
event loop and splits it here, with no lock and no selector per message; end of file
means the runner's process is gone.

Both ends are typed by the messages they carry (`FrameWriter[FromRunner]`,
`FrameReader[FromRunner]`), and the reader checks each frame it unpickles against that
type (`MessageCheck`): a frame of anything else stops the reader with `bad_frame` naming
what arrived, instead of travelling on as a message.

One kind of message may be framed as plain values instead (`PlainForm`: a step's tokens,
once per token): `marshal` bytes of builtin values, flagged in the frame's header, turned
back into the message by the form's own check. Unpickling a message finds its class by
name through the import system, and on a node woken once per token, with its caches cold
after the runner's step, that lookup was most of the ~50 µs a token frame cost to read
(`marshal` of the same values: about a fifth of that, with no class or module touched).
"""

import marshal
import os
import pickle
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from skulk.worker.runner.message_check import BadFrame, MessageCheck

_HEADER = struct.Struct("!I")
_PLAIN = 1 << 31  # in a header: the frame is `marshal` bytes of a `PlainForm`'s values
_LENGTH = _PLAIN - 1
# Version 2 writes no back-references: the native relay (rust/stream) reads a step's
# tokens in this layout without keeping a table of what came before.
_MARSHAL_VERSION = 2

SendT = TypeVar("SendT")
RecvT = TypeVar("RecvT")
PlainT = TypeVar("PlainT")


@dataclass(frozen=True)
class PlainForm(Generic[PlainT]):
    """A message class framed as builtin values (strings, numbers, lists, tuples) that
    `marshal` carries: `values` gives them, `message` turns what a frame carried back
    into the message, raising `BadFrame` when it has the wrong shape."""

    cls: type[PlainT]
    values: Callable[[PlainT], list[object]]
    message: Callable[[object], PlainT]


def encode(messages: Sequence[PlainT], plain: PlainForm[PlainT] | None = None) -> bytes:
    """The frames of `messages`, in order, as one buffer; a message of `plain`'s class
    as its plain values."""
    parts: list[bytes] = []
    for message in messages:
        if plain is not None and type(message) is plain.cls:
            body = marshal.dumps(plain.values(message), _MARSHAL_VERSION)
            parts += [_HEADER.pack(len(body) | _PLAIN), body]
            continue
        body = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        parts += [_HEADER.pack(len(body)), body]
    return b"".join(parts)


class FrameReader(Generic[RecvT]):
    """Bytes in as they arrive, whole checked messages out; a partial frame waits for the
    rest. After a bad frame it gives nothing more (`bad_frame` says what it was)."""

    def __init__(self, check: MessageCheck[RecvT],
                 plain: PlainForm[RecvT] | None = None) -> None:
        self._check = check
        self._plain = plain
        self._pending = bytearray()
        self.bad_frame: str | None = None

    def feed(self, data: bytes) -> list[RecvT]:
        """The messages whole in what has arrived, up to a bad frame if one came."""
        if self.bad_frame is not None:
            return []
        pending = self._pending
        pending += data
        messages: list[RecvT] = []
        start = 0
        members = self._check.members  # checked inline: this runs once per token
        try:
            while len(pending) - start >= _HEADER.size:
                (header,) = _HEADER.unpack_from(pending, start)
                end = start + _HEADER.size + (header & _LENGTH)
                if end > len(pending):
                    break
                body = pending[start + _HEADER.size:end]
                message: object
                if header & _PLAIN:
                    if self._plain is None:
                        raise BadFrame("a frame of plain values, which this pipe does not "
                                       "carry")
                    message = self._plain.message(marshal.loads(body))
                else:
                    message = pickle.loads(body)
                    if not isinstance(message, members):
                        raise self._check.refusal(message)
                messages.append(cast(RecvT, message))
                start = end
        except BadFrame as error:
            return self._stopped(messages, str(error))
        except Exception as error:  # whatever the bytes made the unpickler raise
            return self._stopped(messages, f"a frame of {end - start - _HEADER.size} bytes "
                                 f"did not unpickle: {type(error).__name__}: {error}")
        del pending[:start]
        return messages

    def _stopped(self, messages: list[RecvT], why: str) -> list[RecvT]:
        self.bad_frame = why
        self._pending.clear()
        return messages

    @property
    def partial(self) -> bool:
        """Bytes of an unfinished frame are waiting (at end of file: a torn message)."""
        return bool(self._pending)


class FrameWriter(Generic[SendT]):
    """The runner's end: blocking writes of whole buffers (a full pipe waits for the
    supervisor to read, which it does on every wake-up of its event loop)."""

    def __init__(self, fd: int, plain: PlainForm[SendT] | None = None) -> None:
        self._fd = fd
        self._plain = plain
        self._held: list[SendT] | None = None

    def send(self, message: SendT) -> None:
        if self._held is not None:
            self._held.append(message)
        else:
            self._write(encode([message], self._plain))

    def hold(self) -> None:
        """Collect messages until `flush`: one write for a whole step's output."""
        if self._held is None:
            self._held = []

    def flush(self) -> None:
        held, self._held = self._held, None
        if held:
            self._write(encode(held, self._plain))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]


def read_available(fd: int, reader: FrameReader[RecvT], chunk_size: int = 1 << 16) -> \
        tuple[list[RecvT], bool]:
    """Every whole message readable now from non-blocking `fd`, and whether the writer
    is gone (end of file). A read shorter than `chunk_size` emptied the pipe, so it is
    not followed by one more that would only find it empty (one system call per token
    less); end of file then shows as the next readable event. A bad frame ends the
    reading as end of file would (the reader's `bad_frame` says why)."""
    messages: list[RecvT] = []
    while True:
        try:
            data = os.read(fd, chunk_size)
        except BlockingIOError:
            return messages, False
        if not data:
            return messages, True
        messages += reader.feed(data)
        if reader.bad_frame is not None:
            return messages, True
        if len(data) < chunk_size:
            return messages, False
