"""The transport interface the router speaks: keyed publish and subscribe of bytes."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

# Answers one query's payload (None: no answer). Called on a transport thread, so it must
# be quick and thread-safe.
QueryHandler = Callable[[bytes], bytes | None]


@dataclass(frozen=True)
class Message:
    """One publication as a subscriber sees it."""

    key: str
    payload: bytes


class TransportClosed(RuntimeError):
    """The transport was closed; open a new one to publish or subscribe again."""


class Subscription(Protocol):
    """Messages matching one key expression, in arrival order, until closed.

    Waiting for the next message is cancellation-safe: a cancelled wait loses nothing and
    the subscription keeps working. Iteration ends once `close()` is called.
    """

    def __aiter__(self) -> Self: ...

    async def __anext__(self) -> Message: ...

    def put(self, message: Message) -> None:
        """Hand `message` to this subscription from the event loop's thread, behind what
        it already holds (the router's in-process delivery)."""
        ...

    def get_nowait(self) -> Message | None:
        """The next message already delivered, without waiting; None when there is none."""
        ...

    def close(self) -> None: ...


# Payloads of liveliness messages: a token appeared, or went away.
ALIVE = b"+"
GONE = b"-"


class Transport(Protocol):
    """Zenoh-style keys: `/`-separated chunks; `*` is one chunk, `**` any number.

    Every matching subscription receives every publication, the publisher's own included,
    and one publisher's messages arrive in the order they were published.

    Liveliness: a token declared under a key lives as long as its transport (or its
    process); a watch yields an `ALIVE` message for every live token first, then `ALIVE`
    and `GONE` messages as tokens come and go.
    """

    async def publish(self, key: str, payload: bytes) -> None: ...

    async def publish_remote(self, key: str, payload: Callable[[], bytes]) -> None:
        """Like `publish`, to the subscriptions of other transports only (other nodes);
        `payload` is made only when one of them may hear it, so a message nobody outside
        listens to costs no encoding or sealing."""
        ...

    def subscribe(self, key_expr: str) -> Subscription: ...

    def declare_liveliness(self, key: str) -> None: ...

    def watch_liveliness(self, key_expr: str) -> Subscription: ...

    def answer(self, key: str, handler: QueryHandler) -> None:
        """Answer queries on `key` with `handler` while the transport lives (request and
        response over the cluster: remote drafting)."""
        ...

    async def query(self, key: str, payload: bytes, timeout: float) -> bytes | None:
        """The first answer to a query on `key` within `timeout` seconds, or None."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class ListensOnEndpoints(Protocol):
    """A transport that can say which endpoints it actually bound (e.g. `tcp/IP:PORT`)."""

    async def listen_endpoints(self) -> list[str]: ...
