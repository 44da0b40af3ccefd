"""A subscription backed by an unbounded asyncio queue, shared by both transports."""

import asyncio
from collections.abc import Callable

from skulk.routing.transport import Message


class QueueSubscription:
    """Yields messages put into it (from the loop's thread or any other) until closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop,
                 on_close: Callable[["QueueSubscription"], None]) -> None:
        self._loop = loop
        # `None` marks the end: put on close to wake a waiting reader, who puts it back for
        # any other reader.
        self._queue: asyncio.Queue[Message | None] = asyncio.Queue()
        self._on_close = on_close
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def put(self, message: Message) -> None:
        """Deliver from the event loop's thread."""
        if not self._closed:
            self._queue.put_nowait(message)

    def put_threadsafe(self, message: Message) -> None:
        """Deliver from any other thread (Zenoh's callback threads)."""
        try:
            self._loop.call_soon_threadsafe(self.put, message)
        except RuntimeError:
            pass  # the loop is closed: nobody is left to read this message

    def get_nowait(self) -> Message | None:
        """The next message already delivered, without waiting; None when there is none
        (or the subscription ended: iterating says so)."""
        if self._closed or self._queue.empty():
            return None
        item = self._queue.get_nowait()
        if item is None:
            self._queue.put_nowait(None)  # the end marker stays for the iterator
        return item

    def close(self) -> None:
        """End iteration (buffered messages are dropped) and detach from the transport."""
        if self._closed:
            return
        self._closed = True
        self._queue.put_nowait(None)
        self._on_close(self)

    def __aiter__(self) -> "QueueSubscription":
        return self

    async def __anext__(self) -> Message:
        # A method, not an async generator: a cancelled wait must leave the iterator usable.
        if self._closed:
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)
            raise StopAsyncIteration
        return item
