"""What has arrived on a stream, taken together: the first item waited for, then every
item already there (up to a bound), so the master indexes a burst under one signature.

A pump task moves items from the source (a router subscription, which verifies and
decodes each message) into an unbounded in-process channel; a subscription's queued
messages are all moved in one step, so whatever arrived while the master worked is taken
in one batch. The taker lets the loop turn once more after the last item it took, and
stops at the first turn that brings nothing: an item alone waits one turn, never a timer.
"""

import math
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")


class ReadyBatches(Generic[T]):
    """`pump` runs as a task; `take` returns the next batch (at least one item)."""

    def __init__(self, source: AsyncIterable[T], *, most: int) -> None:
        self._source = source
        self._most = most
        self._send, self._receive = anyio.create_memory_object_stream[T](math.inf)

    async def pump(self) -> None:
        """Move every item of the source into the channel until the source ends."""
        try:
            async for item in self._source:
                self._send.send_nowait(item)
        finally:
            self._send.close()

    async def take(self) -> list[T]:
        """The next item (waiting for it), with every item already behind it, up to
        `most`; raises `anyio.EndOfStream` once the source ended and all were taken."""
        batch = [await self._receive.receive()]
        turned = False  # whether the loop turned once since the last item came
        while len(batch) < self._most:
            try:
                batch.append(self._receive.receive_nowait())
                turned = False
            except anyio.WouldBlock:
                if turned:
                    break
                # One turn of the loop, for what the pump has ready (a source that yields
                # per item, as an in-process stream does, brings one more per turn).
                await anyio.lowlevel.checkpoint()
                turned = True
            except anyio.EndOfStream:
                break
        return batch


async def handle_ready(source: AsyncIterable[T], handle: Callable[[list[T]], Awaitable[None]],
                       *, most: int) -> None:
    """`handle` each batch of what is ready on `source`, until it ends."""
    ready = ReadyBatches(source, most=most)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(ready.pump)
        while True:
            try:
                batch = await ready.take()
            except anyio.EndOfStream:
                return
            await handle(batch)
