"""The Zenoh transport: the only module that touches `zenoh`, so `Any` stays here.

Peer mode, explicit listen/connect endpoints, multicast scouting off unless asked.
Publications are reliable with blocking congestion control, so one publisher's messages
arrive in order; Zenoh also delivers a session's own publications to its own subscribers,
which is how a lone node talks to itself.
"""

import asyncio
import json
from typing import Any

import anyio
import zenoh

from skulk.routing.queue_subscription import QueueSubscription
from skulk.routing.transport import Message


def _config(listen: list[str], connect: list[str], multicast_scouting: bool) -> Any:
    config = zenoh.Config()
    config.insert_json5("mode", json.dumps("peer"))
    config.insert_json5("listen/endpoints", json.dumps(listen))
    config.insert_json5("connect/endpoints", json.dumps(connect))
    config.insert_json5("scouting/multicast/enabled", json.dumps(multicast_scouting))
    return config


class ZenohTransport:
    def __init__(self, session: Any) -> None:
        self._session = session
        self._publishers: dict[str, Any] = {}
        self._subscriptions: dict[QueueSubscription, Any] = {}

    @classmethod
    async def open(cls, *, listen: list[str], connect: list[str],
                   multicast_scouting: bool = False) -> "ZenohTransport":
        config = _config(listen, connect, multicast_scouting)
        session = await anyio.to_thread.run_sync(zenoh.open, config)
        return cls(session)

    async def publish(self, key: str, payload: bytes) -> None:
        publisher = self._publishers.get(key)
        if publisher is None:
            publisher = self._session.declare_publisher(
                key, congestion_control=zenoh.CongestionControl.BLOCK,
                reliability=zenoh.Reliability.RELIABLE)
            self._publishers[key] = publisher
        publisher.put(payload)

    def subscribe(self, key_expr: str) -> QueueSubscription:
        subscription = QueueSubscription(asyncio.get_running_loop(), self._forget)

        def on_sample(sample: Any) -> None:
            subscription.put_threadsafe(Message(str(sample.key_expr),
                                                sample.payload.to_bytes()))

        self._subscriptions[subscription] = self._session.declare_subscriber(
            key_expr, on_sample)
        return subscription

    def _forget(self, subscription: QueueSubscription) -> None:
        subscriber = self._subscriptions.pop(subscription, None)
        if subscriber is not None and not self._session.is_closed():
            subscriber.undeclare()

    async def close(self) -> None:
        for subscription in list(self._subscriptions):
            subscription.close()
        for publisher in self._publishers.values():
            publisher.undeclare()
        self._publishers.clear()
        await anyio.to_thread.run_sync(self._session.close)
