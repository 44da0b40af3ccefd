"""The worker → runner direction as frames on a plain pipe (see pipe_frames).

The node writes a message straight from its event loop: no feeder thread has to win the
GIL from a busy loop first (up to the 5 ms switch interval, on the path of every request's
first token, as under `multiprocessing.Queue`). A frame the pipe cannot take now (a long
prompt while the runner is mid-step) waits in a buffer the loop drains when the pipe has
room, so the loop never blocks. The runner reads with a timeout between steps; end of
file means the node is gone, and the runner shuts down.
"""

import asyncio
import os
import queue
import select
from collections import deque

from skulk.worker.runner.messages import TO_RUNNER, ShutdownRequest, ToRunner
from skulk.worker.runner.pipe_frames import FrameReader, encode


class InboxWriter:
    """The node's end: `send` never blocks; what does not fit waits for the pipe."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._pending = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def send(self, message: ToRunner) -> None:
        if self._closed:
            return
        self._pending += encode([message])
        if self._loop is None:  # not yet waiting for room: try now
            self._write()

    def _write(self) -> None:
        try:
            while self._pending:
                written = os.write(self._fd, self._pending)
                del self._pending[:written]
        except BlockingIOError:
            pass
        except OSError:  # the runner is gone: its death is handled on the other pipe
            self._pending.clear()
        if self._pending and self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._loop.add_writer(self._fd, self._write)
        elif not self._pending and self._loop is not None:
            self._loop.remove_writer(self._fd)
            self._loop = None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._loop is not None:
            self._loop.remove_writer(self._fd)
        os.close(self._fd)


class RunnerInbox:
    """The runner's end, in place of a queue: `get(timeout)` and `get_nowait()` raise
    `queue.Empty` when nothing came; end of file gives a `ShutdownRequest`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._frames = FrameReader(TO_RUNNER)
        self._messages: deque[ToRunner] = deque()
        self._ended = False

    def get(self, timeout: float | None = None) -> ToRunner:
        if not self._messages and not self._ended:
            readable, _, _ = select.select([self._fd], [], [], timeout)
            if readable:
                self._read()
        return self.get_nowait()

    def get_nowait(self) -> ToRunner:
        if not self._messages and not self._ended:
            readable, _, _ = select.select([self._fd], [], [], 0)
            if readable:
                self._read()
        if self._messages:
            return self._messages.popleft()
        if self._ended:
            return ShutdownRequest()
        raise queue.Empty

    def _read(self) -> None:
        data = os.read(self._fd, 1 << 16)
        if not data:
            self._ended = True
            return
        self._messages += self._frames.feed(data)
        if self._frames.bad_frame is not None:
            raise RuntimeError(f"the node sent what no runner takes: {self._frames.bad_frame}")
