"""The transport interface the router speaks: keyed publish and subscribe of bytes."""

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Message:
    key: str
    payload: bytes


class Subscription(Protocol):
    """Messages matching one key expression, in arrival order, until closed."""

    def __aiter__(self) -> AsyncIterator[Message]: ...

    def close(self) -> None: ...


class Transport(Protocol):
    """Zenoh-style keys: `/`-separated chunks; `*` is one chunk, `**` any number."""

    async def publish(self, key: str, payload: bytes) -> None: ...

    def subscribe(self, key_expr: str) -> Subscription: ...

    async def close(self) -> None: ...
