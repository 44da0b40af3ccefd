"""An in-memory transport: N nodes in one process, for fast deterministic tests."""

import asyncio

from skulk.routing.keys import key_matches
from skulk.routing.queue_subscription import QueueSubscription
from skulk.routing.transport import Message


class MemoryBus:
    """The shared medium; every transport on it sees every matching publication."""

    def __init__(self) -> None:
        self.subscriptions: list[tuple[str, QueueSubscription]] = []


class MemoryTransport:
    """A transport on a `MemoryBus`; delivery is immediate and in publish order."""

    def __init__(self, bus: MemoryBus) -> None:
        self._bus = bus
        self._own: list[QueueSubscription] = []

    async def publish(self, key: str, payload: bytes) -> None:
        message = Message(key, payload)
        for key_expr, subscription in list(self._bus.subscriptions):
            if key_matches(key_expr, key):
                subscription.put(message)

    def subscribe(self, key_expr: str) -> QueueSubscription:
        subscription = QueueSubscription(asyncio.get_running_loop(), self._forget)
        self._bus.subscriptions.append((key_expr, subscription))
        self._own.append(subscription)
        return subscription

    def _forget(self, subscription: QueueSubscription) -> None:
        self._bus.subscriptions = [(k, s) for k, s in self._bus.subscriptions
                                   if s is not subscription]
        if subscription in self._own:
            self._own.remove(subscription)

    async def close(self) -> None:
        for subscription in list(self._own):
            subscription.close()
