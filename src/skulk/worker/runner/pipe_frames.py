"""A runner's messages to its supervisor as length-prefixed pickles on a plain pipe.

The runner writes each step's messages itself, in one `os.write`, before its next compute
step: no feeder thread wakes up while the compute threads run, as it did under
`multiprocessing.Queue`. The supervisor reads whatever is there in one `os.read` on the
event loop and splits it here, with no lock and no selector per message; end of file
means the runner's process is gone.
"""

import os
import pickle
import struct
from typing import Any

_HEADER = struct.Struct("!I")


def encode(messages: list[Any]) -> bytes:
    """The frames of `messages`, in order, as one buffer."""
    parts: list[bytes] = []
    for message in messages:
        body = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        parts += [_HEADER.pack(len(body)), body]
    return b"".join(parts)


class FrameReader:
    """Bytes in as they arrive, whole messages out; a partial frame waits for the rest."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self._pending += data
        messages: list[Any] = []
        start = 0
        while len(self._pending) - start >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._pending, start)
            end = start + _HEADER.size + length
            if end > len(self._pending):
                break
            messages.append(pickle.loads(self._pending[start + _HEADER.size:end]))
            start = end
        del self._pending[:start]
        return messages

    @property
    def partial(self) -> bool:
        """Bytes of an unfinished frame are waiting (at end of file: a torn message)."""
        return bool(self._pending)


class FrameWriter:
    """The runner's end: blocking writes of whole buffers (a full pipe waits for the
    supervisor to read, which it does on every wake-up of its event loop)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._held: list[Any] | None = None

    def send(self, message: Any) -> None:
        if self._held is not None:
            self._held.append(message)
        else:
            self._write(encode([message]))

    def hold(self) -> None:
        """Collect messages until `flush`: one write for a whole step's output."""
        if self._held is None:
            self._held = []

    def flush(self) -> None:
        held, self._held = self._held, None
        if held:
            self._write(encode(held))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]


def read_available(fd: int, reader: FrameReader, chunk_size: int = 1 << 16) -> \
        tuple[list[Any], bool]:
    """Every whole message readable now from non-blocking `fd`, and whether the writer
    is gone (end of file). A read shorter than `chunk_size` emptied the pipe, so it is
    not followed by one more that would only find it empty (one system call per token
    less); end of file then shows as the next readable event."""
    messages: list[Any] = []
    while True:
        try:
            data = os.read(fd, chunk_size)
        except BlockingIOError:
            return messages, False
        if not data:
            return messages, True
        messages += reader.feed(data)
        if len(data) < chunk_size:
            return messages, False
