"""Channel ends for tests: a `Sender` that keeps what it is sent, or hands it on."""

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from skulk.shared.types.events import IndexedBatch, IndexedEvent

T = TypeVar("T")


class Collected(Generic[T]):
    """A `Sender` that keeps every item, in order."""

    def __init__(self) -> None:
        self.items: list[T] = []

    async def send(self, item: T, /) -> None:
        self.items.append(item)


class SendTo(Generic[T]):
    """A `Sender` that hands each item to `take` at once."""

    def __init__(self, take: Callable[[T], object]) -> None:
        self._take = take

    async def send(self, item: T, /) -> None:
        self._take(item)


class SendThrough(Generic[T]):
    """A `Sender` that awaits `send` with each item (a benchmark's or test's function)."""

    def __init__(self, send: Callable[[T], Awaitable[None]]) -> None:
        self._send = send

    async def send(self, item: T, /) -> None:
        await self._send(item)


def each_indexed_event(into: list[IndexedEvent]) -> SendTo[IndexedBatch]:
    """A `Sender` of the master's batches that keeps each event of each, in order."""
    return SendTo(lambda batch: into.extend(batch.events))
