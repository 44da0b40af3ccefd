"""A runner's standard output, logged through the node's logger at debug level.

Libraries a runner loads print to file descriptor 1 from C (ggml's RPC server prints its
banner and a line for every connection of the head). Left alone that text lands in the
node's terminal between its log lines; the runner points its descriptor 1 at a pipe
instead (`point_stdout_at`), and the supervisor reads it on the event loop (`RunnerStdout`)
and logs each line under the runner's id, shown with `-v`. Standard error stays the
terminal's: what a runner says there (a traceback, a ring's deadline) is for people.
"""

import asyncio
import io
import os
import sys

from loguru import logger

# A line longer than this is logged in pieces rather than held without end.
MAX_LINE_BYTES = 8192


def point_stdout_at(fd: int) -> None:
    """In the runner: descriptor 1, and Python's `print`, write to `fd` from now on."""
    os.dup2(fd, 1)
    os.close(fd)
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)


class RunnerStdout:
    """Reads the pipe whenever it is readable, until the runner (and every process it
    started) has closed its end; the pipe never fills, so a printing runner never
    blocks on it."""

    def __init__(self, fd: int, runner: str) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd
        self._runner = runner
        self._partial = b""
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        if self._drained():
            self.close()

    def _drained(self) -> bool:
        """Read all there is; True at end of file."""
        assert self._fd is not None
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return False
            if not data:
                return True
            self._take(data)

    def _take(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        while len(self._partial) > MAX_LINE_BYTES:
            lines.append(self._partial[:MAX_LINE_BYTES])
            self._partial = self._partial[MAX_LINE_BYTES:]
        for line in lines:
            self._log(line)

    def _log(self, line: bytes) -> None:
        text = line.decode(errors="replace").rstrip()
        if text:
            logger.debug("runner {}: {}", self._runner, text)

    def close(self) -> None:
        """Log what is left and stop reading (idempotent); a last line without its
        newline is logged too."""
        if self._fd is None:
            return
        self._drained()  # what the runner printed last may not have woken the loop yet
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = None
        self._log(self._partial)
        self._partial = b""
