"""The typed ends a node's components are wired with.

A component is handed the `Sender`s it sends on, the async iterables it reads and
read-only views of what it looks at; it never holds a callback into the node. What is
at the other end of a `Sender` (a router topic, an in-process stream, a test's list) is
the wiring's business, not the component's.
"""

import math
from typing import Protocol, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Sender(Protocol[T_contra]):
    """The sending end of a channel that carries `T_contra` values."""

    async def send(self, item: T_contra, /) -> None: ...


class InstantSender(Protocol[T_contra]):
    """An end that hands a value over at once, with no waiting, where it stays in this
    process (a chunk for a stream on this node); False: it did nothing, and the value
    goes by the channel's `Sender` instead. For the per-token path, where a wake of a
    task per value costs more than the value's own work."""

    def send_now(self, item: T_contra, /) -> bool: ...


def channel(item_type: type[T], size: float = math.inf
            ) -> tuple[MemoryObjectSendStream[T], MemoryObjectReceiveStream[T]]:
    """An in-process channel of `item_type` values, unbounded unless `size` says so: a
    sender on the node's paths must never wait on a slow reader."""
    return anyio.create_memory_object_stream[T](size)
