"""An in-memory transport: N nodes in one process, for fast deterministic tests."""

import asyncio
from collections.abc import Callable

import anyio

from skulk.routing.keys import key_matches
from skulk.routing.queue_subscription import QueueSubscription
from skulk.routing.transport import ALIVE, GONE, Message, QueryHandler, TransportClosed


class MemoryBus:
    """The shared medium: every transport on it sees every matching publication."""

    def __init__(self) -> None:
        self._subscriptions: list[tuple[str, QueueSubscription]] = []
        self._tokens: dict[str, MemoryTransport] = {}
        self._watches: list[tuple[str, QueueSubscription]] = []
        self._answerers: dict[str, tuple[QueryHandler, MemoryTransport]] = {}

    def add_answerer(self, key: str, handler: QueryHandler, owner: "MemoryTransport") -> None:
        self._answerers[key] = (handler, owner)

    def drop_answerers_of(self, owner: "MemoryTransport") -> None:
        self._answerers = {k: v for k, v in self._answerers.items() if v[1] is not owner}

    def query(self, key: str, payload: bytes) -> bytes | None:
        """The answer of whoever answers `key`; None when nobody does (or it declines)."""
        answerer = self._answerers.get(key)
        return None if answerer is None else answerer[0](payload)

    def add_token(self, key: str, owner: "MemoryTransport") -> None:
        self._tokens[key] = owner
        self._announce(Message(key, ALIVE))

    def drop_tokens_of(self, owner: "MemoryTransport") -> None:
        for key in [k for k, holder in self._tokens.items() if holder is owner]:
            del self._tokens[key]
            self._announce(Message(key, GONE))

    def watch(self, key_expr: str, watch: QueueSubscription) -> None:
        for key in list(self._tokens):
            if key_matches(key_expr, key):
                watch.put(Message(key, ALIVE))
        self._watches.append((key_expr, watch))

    def _announce(self, message: Message) -> None:
        for key_expr, watch in list(self._watches):
            if key_matches(key_expr, message.key):
                watch.put(message)

    def attach(self, key_expr: str, subscription: QueueSubscription) -> None:
        self._subscriptions.append((key_expr, subscription))

    def detach(self, subscription: QueueSubscription) -> None:
        self._subscriptions = [(key_expr, attached) for key_expr, attached
                               in self._subscriptions if attached is not subscription]
        self._watches = [(key_expr, attached) for key_expr, attached
                         in self._watches if attached is not subscription]

    def deliver(self, message: Message) -> None:
        """Hand `message` to every matching subscription, synchronously and in order."""
        for key_expr, subscription in list(self._subscriptions):
            if key_matches(key_expr, message.key):
                subscription.put(message)

    def deliver_to_others(self, key: str, payload: Callable[[], bytes],
                          own: list[QueueSubscription]) -> None:
        """Like `deliver`, skipping the subscriptions in `own`; `payload` is made only if
        another subscription matches."""
        others = [subscription for key_expr, subscription in list(self._subscriptions)
                  if subscription not in own and key_matches(key_expr, key)]
        if others:
            message = Message(key, payload())
            for subscription in others:
                subscription.put(message)


class MemoryTransport:
    """A transport on a `MemoryBus`; delivery is immediate and in publish order."""

    def __init__(self, bus: MemoryBus) -> None:
        self._bus = bus
        self._own: list[QueueSubscription] = []
        self._closed = False

    async def publish(self, key: str, payload: bytes) -> None:
        self._check_open()
        # Yield first, as a network transport would, so a publishing loop cannot starve
        # its readers; a cancelled publish then delivers nothing.
        await anyio.lowlevel.checkpoint()
        self._check_open()
        self._bus.deliver(Message(key, payload))

    async def publish_remote(self, key: str, payload: Callable[[], bytes]) -> None:
        self._check_open()
        await anyio.lowlevel.checkpoint()  # as `publish`: yield first
        self._check_open()
        self._bus.deliver_to_others(key, payload, self._own)

    def subscribe(self, key_expr: str) -> QueueSubscription:
        self._check_open()
        subscription = QueueSubscription(asyncio.get_running_loop(), self._forget)
        self._bus.attach(key_expr, subscription)
        self._own.append(subscription)
        return subscription

    def declare_liveliness(self, key: str) -> None:
        self._check_open()
        self._bus.add_token(key, self)

    def watch_liveliness(self, key_expr: str) -> QueueSubscription:
        self._check_open()
        watch = QueueSubscription(asyncio.get_running_loop(), self._forget)
        self._bus.watch(key_expr, watch)
        self._own.append(watch)
        return watch

    def answer(self, key: str, handler: QueryHandler) -> None:
        self._check_open()
        self._bus.add_answerer(key, handler, self)

    async def query(self, key: str, payload: bytes, timeout: float) -> bytes | None:
        self._check_open()
        return self._bus.query(key, payload)

    async def close(self) -> None:
        """Like a node dying: its subscriptions end and its tokens vanish for everyone;
        the bus and other transports go on."""
        self._closed = True
        for subscription in list(self._own):
            subscription.close()
        self._bus.drop_tokens_of(self)
        self._bus.drop_answerers_of(self)

    def _forget(self, subscription: QueueSubscription) -> None:
        self._bus.detach(subscription)
        if subscription in self._own:
            self._own.remove(subscription)

    def _check_open(self) -> None:
        if self._closed:
            raise TransportClosed("this memory transport is closed; make a new one on the bus")
