"""The supervisor's end of a runner's pipe, read on the event loop as bytes arrive.

The loop calls back when the pipe is readable; the callback reads everything there and
wakes `take`. Waiting costs no cancel scope and no thread, which matters at one wake-up
per token (see pipe_frames).
"""

import asyncio
import os

from skulk.worker.runner.messages import FROM_RUNNER, FromRunner
from skulk.worker.runner.pipe_frames import FrameReader, read_available


class RunnerOutput:
    """Messages from one runner, each checked to be a `FromRunner`; `ended` once the
    runner's end of the pipe is closed (the process exited or was killed), or it sent a
    frame of anything else (`bad_frame`), and everything before was taken."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._frames = FrameReader(FROM_RUNNER)
        self._messages: list[FromRunner] = []
        self._eof = False
        self._ready = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        messages, eof = read_available(self._fd, self._frames)
        self._messages += messages
        if eof:
            self._stop_reading()
        self._ready.set()

    def _stop_reading(self) -> None:
        if not self._eof:
            self._eof = True
            self._loop.remove_reader(self._fd)

    @property
    def ended(self) -> bool:
        return self._eof and not self._messages

    @property
    def bad_frame(self) -> str | None:
        """What the runner sent that is no message of its pipe (reading stopped there)."""
        return self._frames.bad_frame

    @property
    def torn(self) -> bool:
        """The pipe ended inside a message (the runner died while writing it)."""
        return self._eof and self._frames.partial and self.bad_frame is None

    async def take(self, patience: float) -> list[FromRunner]:
        """What arrived since the last call; waits up to `patience` seconds for
        something (an empty list then: the caller checks the process is alive)."""
        if not self._messages and not self._eof:
            self._ready.clear()
            timer = self._loop.call_later(patience, self._ready.set)
            try:
                await self._ready.wait()
            finally:
                timer.cancel()
        messages, self._messages = self._messages, []
        return messages

    def close(self) -> None:
        self._stop_reading()
        os.close(self._fd)
