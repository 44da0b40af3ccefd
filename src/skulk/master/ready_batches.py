"""What has arrived on a stream, taken together: the first item waited for, then every
item already there (up to a bound), so the master indexes a burst under one signature.

The reader takes straight from the source (a router subscription, which verifies and
decodes each message as it is taken, or an in-process stream): no task in between, so an
item that arrives alone is read, indexed and published in the steps of the one task that
reads it. After the last item it took, the reader lets the loop turn once more and stops
at the first turn that brings nothing: an item alone waits one turn, never a timer. That
turn is also the yield every publication owes the loop (the master's handlers are told
they come right after one).
"""

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ReadySource(Protocol[T_co]):
    """A stream whose items already there can be taken without waiting: a router
    subscription, an anyio memory stream."""

    def __aiter__(self) -> AsyncIterator[T_co]: ...

    def receive_nowait(self) -> T_co:
        """The next item already there; raises `anyio.WouldBlock` when there is none and
        `anyio.EndOfStream` once the stream has ended."""
        ...


async def with_ready(first: T, source: ReadySource[T], *, most: int) -> list[T]:
    """`first` and every item already behind it on `source`, up to `most` in all; returns
    after one turn of the loop that brought nothing, or at the bound, always having let
    the loop turn at least once since `first` was taken."""
    batch = [first]
    turned = False  # whether the loop turned once since the last item came
    turns = 0
    while len(batch) < most:
        try:
            batch.append(source.receive_nowait())
            turned = False
        except anyio.WouldBlock:
            if turned:
                break
            # One turn of the loop, for what else is on its way (a source that yields per
            # item, as an in-process stream does, brings one more per turn).
            await anyio.lowlevel.checkpoint()
            turned, turns = True, turns + 1
        except anyio.EndOfStream:
            break
    if turns == 0:
        await anyio.lowlevel.checkpoint()  # the bound reached at once: the turn owed
    return batch


async def handle_ready(source: ReadySource[T], handle: Callable[[list[T]], Awaitable[None]],
                       *, most: int) -> None:
    """`handle` each batch of what is ready on `source`, until it ends; each is handled
    right after a turn of the loop."""
    async for first in source:
        await handle(await with_ready(first, source, most=most))
