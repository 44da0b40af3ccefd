"""The Zenoh transport, and the only module that imports `zenoh`.

Peer mode, explicit listen/connect endpoints, multicast scouting off unless asked.
Publications are reliable with blocking congestion control, so one publisher's messages
arrive in order and none are dropped under load. Zenoh delivers a session's own
publications to its own subscribers, which is how a lone node talks to itself.
"""

import asyncio
import json

import anyio
import zenoh

from skulk.routing.queue_subscription import QueueSubscription
from skulk.routing.transport import ALIVE, GONE, Message, TransportClosed

LEASE_MILLISECONDS = 4000


def _config(listen: list[str], connect: list[str], multicast_scouting: bool) -> zenoh.Config:
    config = zenoh.Config()
    config.insert_json5("mode", json.dumps("peer"))
    config.insert_json5("listen/endpoints", json.dumps(listen))
    config.insert_json5("connect/endpoints", json.dumps(connect))
    config.insert_json5("scouting/multicast/enabled", json.dumps(multicast_scouting))
    # A silent link is declared dead after the lease: 4 s (Zenoh's default is 10 s) lets a
    # cluster notice a lost machine, and elect around it, within a few seconds on a LAN.
    config.insert_json5("transport/link/tx/lease", json.dumps(LEASE_MILLISECONDS))
    return config


def _undeclare(entity: "zenoh.Publisher | zenoh.Subscriber[None]") -> None:
    entity.undeclare()  # type: ignore[no-untyped-call]  # the zenoh stub leaves it unannotated


class ZenohTransport:
    """A transport over one Zenoh session; build it with `ZenohTransport.open`."""

    def __init__(self, session: zenoh.Session) -> None:
        self._session = session
        self._publishers: dict[str, zenoh.Publisher] = {}
        self._subscribers: dict[QueueSubscription, zenoh.Subscriber[None]] = {}
        self._tokens: list[zenoh.LivelinessToken] = []
        self._closed = False

    @classmethod
    async def open(cls, *, listen: list[str], connect: list[str],
                   multicast_scouting: bool = False) -> "ZenohTransport":
        """Open a peer session; endpoints look like `tcp/127.0.0.1:7447`.

        Peers in `connect` need not be up yet: Zenoh keeps retrying in the background.
        """
        config = _config(listen, connect, multicast_scouting)
        # Opening binds sockets and tries the connect endpoints: keep it off the loop.
        session = await anyio.to_thread.run_sync(zenoh.open, config)
        return cls(session)

    def peer_count(self) -> int:
        """How many Zenoh peers this session is connected to right now."""
        return len(self._session.info.peers_zid())

    async def publish(self, key: str, payload: bytes) -> None:
        self._check_open()
        publisher = self._publishers.get(key)
        if publisher is None:
            publisher = self._session.declare_publisher(
                key, congestion_control=zenoh.CongestionControl.BLOCK,
                reliability=zenoh.Reliability.RELIABLE)
            self._publishers[key] = publisher
        # A direct call: `put` only blocks while Zenoh's send queue is full, and a thread
        # hop per message would cost more than that rare wait.
        publisher.put(payload)

    def subscribe(self, key_expr: str) -> QueueSubscription:
        self._check_open()
        subscription = QueueSubscription(asyncio.get_running_loop(), self._forget)

        def on_sample(sample: zenoh.Sample) -> None:
            # Runs on a Zenoh thread; the subscription hands it to the event loop.
            subscription.put_threadsafe(Message(str(sample.key_expr), sample.payload.to_bytes()))

        self._subscribers[subscription] = self._session.declare_subscriber(key_expr, on_sample)
        return subscription

    def declare_liveliness(self, key: str) -> None:
        self._check_open()
        self._tokens.append(self._session.liveliness().declare_token(key))

    def watch_liveliness(self, key_expr: str) -> QueueSubscription:
        self._check_open()
        watch = QueueSubscription(asyncio.get_running_loop(), self._forget)

        def on_change(sample: zenoh.Sample) -> None:
            alive = sample.kind == zenoh.SampleKind.PUT
            watch.put_threadsafe(Message(str(sample.key_expr), ALIVE if alive else GONE))

        # history=True: the tokens alive now arrive first, then the changes.
        self._subscribers[watch] = self._session.liveliness().declare_subscriber(
            key_expr, on_change, history=True)
        return watch

    async def close(self) -> None:
        """End every subscription, then close the session; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for subscription in list(self._subscribers):
            subscription.close()
        for publisher in self._publishers.values():
            _undeclare(publisher)
        self._publishers.clear()
        for token in self._tokens:
            token.undeclare()  # type: ignore[no-untyped-call]
        self._tokens.clear()
        await anyio.to_thread.run_sync(self._session.close)

    def _forget(self, subscription: QueueSubscription) -> None:
        subscriber = self._subscribers.pop(subscription, None)
        if subscriber is not None and not self._session.is_closed():
            _undeclare(subscriber)

    def _check_open(self) -> None:
        if self._closed:
            raise TransportClosed("this Zenoh transport is closed; open a new one")
