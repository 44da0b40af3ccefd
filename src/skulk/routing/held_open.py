"""Holding a subscription open in a task group while its values are read elsewhere."""

from collections.abc import AsyncIterator
from typing import Protocol, TypeVar

import anyio
import anyio.abc

U = TypeVar("U")
U_co = TypeVar("U_co", covariant=True)


class Closable(Protocol[U_co]):
    """A subscription: an async iterator that must be closed."""

    def __aiter__(self) -> AsyncIterator[U_co]: ...

    def close(self) -> None: ...


async def open_in(tasks: anyio.abc.TaskGroup, subscription: Closable[U]) -> AsyncIterator[U]:
    """`subscription`'s values; it is closed when `tasks` ends."""
    opened: AsyncIterator[U] = await tasks.start(_hold_open, subscription)
    return opened


async def _hold_open(subscription: Closable[U], *,
                     task_status: anyio.abc.TaskStatus[AsyncIterator[U]]) -> None:
    try:
        task_status.started(subscription.__aiter__())
        await anyio.sleep_forever()
    finally:
        subscription.close()
