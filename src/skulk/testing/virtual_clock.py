"""An asyncio event loop on virtual time: when nothing is ready to run, its clock jumps to
the next timer instead of sleeping.

Code under test keeps its real `anyio.sleep`, `move_on_after` and timeouts; a simulation
of minutes of cluster time runs in milliseconds, and runs the same way every time (no
thread, no socket and no wall clock decides an order). Only in-process work may run on it:
a real socket or thread would wait for nothing, since the clock jumps past it.
"""

import asyncio
import selectors


class NothingScheduled(RuntimeError):
    """The loop was asked to wait with no timer set: it would wait forever."""


class _JumpingSelector(selectors.SelectSelector):
    def __init__(self, loop: "VirtualClockLoop") -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None
               ) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)  # the loop's own wake-up pipe
        if ready:
            return ready
        if timeout is None:
            raise NothingScheduled("every task waits and no timer is set")
        self._loop.advance(timeout)
        return []


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """Run it with `run_until_complete(asyncio.sleep(seconds))` to let simulated time pass."""

    def __init__(self) -> None:
        self._now = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += max(seconds, 0.0)

    def run_for(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass, running whatever falls due meanwhile."""
        self.run_until_complete(asyncio.sleep(seconds))
