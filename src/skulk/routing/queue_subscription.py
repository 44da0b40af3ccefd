"""A subscription backed by an unbounded asyncio queue, shared by both transports."""

import asyncio
from collections.abc import AsyncIterator, Callable

from skulk.routing.transport import Message

_CLOSED = object()


class QueueSubscription:
    """Yields messages put into it (from any thread) until closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop,
                 on_close: Callable[["QueueSubscription"], None]) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._on_close = on_close
        self._closed = False

    def put(self, message: Message) -> None:
        """From the event loop's thread."""
        if not self._closed:
            self._queue.put_nowait(message)

    def put_threadsafe(self, message: Message) -> None:
        """From any other thread (Zenoh's callback threads)."""
        if not self._closed and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.put, message)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(_CLOSED)
            self._on_close(self)

    async def __aiter__(self) -> AsyncIterator[Message]:
        while True:
            item = await self._queue.get()
            if item is _CLOSED:
                return
            assert isinstance(item, Message)
            yield item
