"""The stream a replica's listener reads what was applied from.

An anyio memory stream lets the loop turn before every item it hands out, so a listener
that is woken for one applied event pays two steps of the loop for it: the wake and that
turn. This stream hands out what is already waiting without a turn, at most
`MOST_WITHOUT_TURN` items in a row (then the loop turns once), and waits for the next item
only when none is there: one event alone costs its listener the one step that woke it.
Nothing is lost when a wait is cancelled (the items stay queued until taken).
"""

from collections import deque
from types import TracebackType
from typing import Generic, Self, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")

# Items handed out without a turn of the loop, at most (a listener that fell behind a
# replay must not take thousands in one step).
MOST_WITHOUT_TURN = 16


class ListenerStream(Generic[T]):
    """Unbounded: the replica puts (`send_nowait`), one listener reads. Read with
    `async with stream: async for item in stream`, or `receive` / `receive_nowait`."""

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._arrived: anyio.Event | None = None  # set when an item comes to a waiting reader
        self._closed = False
        self._without_turn = 0

    def send_nowait(self, item: T) -> None:
        """Queue `item` for the reader; `anyio.BrokenResourceError` once it has closed."""
        if self._closed:
            raise anyio.BrokenResourceError
        self._items.append(item)
        if self._arrived is not None:
            self._arrived.set()

    def receive_nowait(self) -> T:
        """The next item already there; `anyio.WouldBlock` when none is."""
        if self._closed:
            raise anyio.ClosedResourceError
        if not self._items:
            raise anyio.WouldBlock
        return self._items.popleft()

    async def receive(self) -> T:
        """The next item, waiting for it when none is there."""
        if self._items and self._without_turn < MOST_WITHOUT_TURN:
            self._without_turn += 1
            return self.receive_nowait()
        if self._items:
            await anyio.lowlevel.checkpoint()
        while not self._items:
            if self._closed:
                raise anyio.ClosedResourceError
            self._arrived = anyio.Event()
            try:
                await self._arrived.wait()
            finally:
                self._arrived = None
        self._without_turn = 0
        return self.receive_nowait()

    def close(self) -> None:
        """Stop reading: what is queued is dropped and the replica forgets this stream."""
        self._closed = True
        self._items.clear()
        if self._arrived is not None:
            self._arrived.set()

    async def aclose(self) -> None:
        self.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.ClosedResourceError:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, error_type: type[BaseException] | None,
                        error: BaseException | None, traceback: TracebackType | None) -> None:
        self.close()
