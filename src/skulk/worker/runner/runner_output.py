"""The supervisor's end of a runner's pipe, read on the event loop as bytes arrive.

The loop calls back when the pipe is readable; the callback reads everything there and,
while the supervisor's task waits with nothing left to send, hands the messages to
`at_once`, still inside the callback, which deals with what it can there (a chunk for a
stream on this node goes to its stream) and returns what is left for the task (statuses,
a task's end, chunks that must travel). The task is woken only when something is left:
with one stream, a token costs the node one wake of its loop and no task switch, no timer
and no future of its own (see pipe_frames). While the task is busy sending, what arrives
waits as it came and goes through `at_once` in one batch when the task takes it, so that
a request's tokens that piled up meanwhile leave as one chunk (coalesce), as before.

With `relay`, a thread of the native core reads the runner's pipe instead and passes on
here, in order, everything but the plain tokens of streams made direct, which it writes
to their sockets itself (`direct_streams`).
"""

import asyncio
import os
from collections.abc import Callable
from typing import Generic, TypeVar

from skulk._native import Relay
from skulk.worker.runner.messages import FROM_RUNNER, TOKENS_PLAIN, FromRunner
from skulk.worker.runner.pipe_frames import FrameReader, read_available

LeftT = TypeVar("LeftT")


class RunnerOutput(Generic[LeftT]):
    """Messages from one runner, each checked to be a `FromRunner`, given to `at_once`
    as each read brings them; what it leaves waits for `take`. `ended` once the runner's
    end of the pipe is closed (the process exited or was killed), or it sent a frame of
    anything else (`bad_frame`), and everything left before was taken. An exception
    raised by `at_once` stops the reading and is raised again by `take`, in the task
    that reads, as it would have been had that task handled the messages itself."""

    def __init__(self, fd: int, at_once: Callable[[list[FromRunner]], list[LeftT]],
                 relay: bool = False) -> None:
        self.relay: Relay | None = None
        if relay:  # the relay's thread owns the runner's `fd`; this end reads what it passes on
            passed_on, onward = os.pipe()
            self.relay = Relay(fd, onward)
            fd = passed_on
        os.set_blocking(fd, False)
        self._fd = fd
        self._at_once = at_once
        self._frames = FrameReader(FROM_RUNNER, TOKENS_PLAIN)
        self._left: list[LeftT] = []
        self._arrived: list[FromRunner] = []  # read while the task was busy
        self._task_waits = False
        self._eof = False
        self._failure: Exception | None = None
        self._ready = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        messages, eof = read_available(self._fd, self._frames)
        if messages and (self._left or self._arrived or not self._task_waits):
            self._arrived += messages
        elif messages:
            try:
                self._left += self._at_once(messages)
            except Exception as error:  # raised again in the reading task
                self._failure, eof = error, True
        if eof:
            self._stop_reading()
        if self._left or self._arrived or self._eof:
            self._ready.set()

    def _stop_reading(self) -> None:
        if not self._eof:
            self._eof = True
            self._loop.remove_reader(self._fd)

    @property
    def ended(self) -> bool:
        return self._eof and not self._left and not self._arrived

    @property
    def bad_frame(self) -> str | None:
        """What the runner sent that is no message of its pipe (reading stopped there)."""
        return self._frames.bad_frame

    @property
    def torn(self) -> bool:
        """The pipe ended inside a message (the runner died while writing it)."""
        return self._eof and self._frames.partial and self.bad_frame is None

    async def take(self, patience: float) -> list[LeftT]:
        """What `at_once` left since the last call, then what it leaves of the messages
        that arrived while the caller was busy; waits up to `patience` seconds for
        something (an empty list then: the caller checks the process is alive)."""
        if not self._left and not self._arrived and not self._eof:
            self._ready.clear()
            timer = self._loop.call_later(patience, self._ready.set)
            self._task_waits = True
            try:
                await self._ready.wait()
            finally:
                self._task_waits = False
                timer.cancel()
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        left, self._left = self._left, []
        if self._arrived:
            arrived, self._arrived = self._arrived, []
            left += self._at_once(arrived)
        return left

    def close(self) -> None:
        self._stop_reading()
        os.close(self._fd)
