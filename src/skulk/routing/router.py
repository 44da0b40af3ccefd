"""The router: typed, signed topics over a transport, keys prefixed by the namespace.

Keys are `skulk/<fingerprint>/<topic>[/<node id>]`. The fingerprint stands in for the
namespace everywhere, so the raw namespace is never sent or logged.

Every publication is sealed with the sender's signature. A subscription yields only
messages whose signature holds, whose payload is a valid value of the topic's type, and
whose claimed origin (the node id inside the value) is the node that signed it; anything
else is dropped and counted, never raised.

A value for a subscriber of the same router (this node's master seat, replica, worker) is
handed over in-process, in publish order and as the value itself: it is never encoded,
sealed or verified, since it never leaves the process. The transport carries it, sealed,
only to other nodes, and only when one of them listens (`publish_remote`). The receiving
side cannot tell: it gets the same values, with this node as their origin. One router per
transport: a second router on it would not hear the first one's values.
"""

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Self, TypeVar, cast

import anyio
from pydantic import BaseModel

from skulk.routing.dropped import DroppedMessages
from skulk.routing.keys import check_chunk
from skulk.routing.topics import TypedTopic
from skulk.routing.transport import ALIVE, Message, QueryHandler, Subscription, Transport
from skulk.shared.types.ids import NodeId
from skulk.shared.types.wire import from_msgpack, to_msgpack
from skulk.trust.envelope import MessageSigner, MessageVerifier, Rejected

T = TypeVar("T", bound=BaseModel)


def namespace_fingerprint(namespace: str) -> str:
    """The key chunk that stands for `namespace`: 16 hex chars of its sha256."""
    return hashlib.sha256(namespace.encode()).hexdigest()[:16]


class _ClosingSubscription:
    """Owns a transport subscription: `close()` ends it, and so does leaving `async with`."""

    def __init__(self, subscription: Subscription,
                 on_close: Callable[[Subscription], None] = lambda _: None) -> None:
        self._subscription = subscription
        self._on_close = on_close

    def close(self) -> None:
        """Stop receiving; iteration ends."""
        self._on_close(self._subscription)
        self._subscription.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, error_type: type[BaseException] | None,
                        error: BaseException | None, traceback: TracebackType | None) -> None:
        self.close()


@dataclass(frozen=True)
class Received(Generic[T]):
    """A value and the node that signed it."""

    origin: NodeId
    value: T


@dataclass(frozen=True)
class _HandedOver(Message):
    """A value this router published, put straight into its own subscriptions."""

    received: Received[Any]


class _Opener(Generic[T]):
    """Turns one transport message into a verified value of a topic, or counts the drop."""

    def __init__(self, topic: TypedTopic[T], verifier: MessageVerifier,
                 dropped: DroppedMessages) -> None:
        self.topic = topic
        self._verifier = verifier
        self._dropped = dropped

    def open(self, message: Message) -> Received[T] | None:
        if type(message) is _HandedOver:
            return cast(Received[T], message.received)
        try:
            origin, payload = self._verifier.open(message.key, message.payload)
        except Rejected as rejected:
            self._dropped.count(self.topic.name, rejected.reason, len(message.payload))
            return None
        try:
            value = from_msgpack(self.topic.model, payload)
        except ValueError:
            self._dropped.count(self.topic.name, "invalid", len(message.payload))
            return None
        if self.topic.origin_of is not None and self.topic.origin_of(value) != origin:
            self._dropped.count(self.topic.name, "forged_origin", len(message.payload))
            return None
        return Received(origin, value)


class TopicSubscription(_ClosingSubscription, Generic[T]):
    """Verified values of one topic; use as `async with router.subscribe(topic) as values`.

    A cancelled wait loses nothing, so the same subscription can be read under
    `anyio.move_on_after` and read again.
    """

    def __init__(self, opener: _Opener[T], subscription: Subscription,
                 on_close: Callable[[Subscription], None]) -> None:
        super().__init__(subscription, on_close)
        self._opener = opener

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        while True:
            received = self._opener.open(await anext(self._subscription))
            if received is not None:
                return received.value

    def receive_nowait(self) -> T:
        """The next verified value already delivered, without waiting (what was dropped on
        the way is counted and skipped); raises `anyio.WouldBlock` when there is none."""
        while (message := self._subscription.get_nowait()) is not None:
            received = self._opener.open(message)
            if received is not None:
                return received.value
        raise anyio.WouldBlock


class OriginSubscription(_ClosingSubscription, Generic[T]):
    """Verified values of one topic with the node that signed each."""

    def __init__(self, opener: _Opener[T], subscription: Subscription,
                 on_close: Callable[[Subscription], None]) -> None:
        super().__init__(subscription, on_close)
        self._opener = opener

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Received[T]:
        while True:
            received = self._opener.open(await anext(self._subscription))
            if received is not None:
                return received


class MembershipWatch(_ClosingSubscription):
    """Use as `async with router.membership() as changes: async for node, alive in changes`."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> tuple[NodeId, bool]:
        message = await anext(self._subscription)
        return NodeId(message.key.rsplit("/", 1)[-1]), message.payload == ALIVE


class Router:
    """Publishes and subscribes typed values on one namespace of a transport."""

    def __init__(self, transport: Transport, *, namespace: str, signer: MessageSigner,
                 verifier: MessageVerifier, dropped: DroppedMessages | None = None,
                 local_delivery: bool = True) -> None:
        """`local_delivery` off: this node's own values make the round trip through the
        transport, sealed and verified, like any other (to compare the two)."""
        self._transport = transport
        self._prefix = f"skulk/{namespace_fingerprint(namespace)}"
        self._node_id = NodeId(check_chunk(signer.node_id))
        self._signer = signer
        self._verifier = verifier
        self.dropped = dropped if dropped is not None else DroppedMessages()
        self._local_delivery = local_delivery
        self._local: dict[str, list[Subscription]] = {}  # key → this router's subscriptions

    @property
    def node_id(self) -> NodeId:
        return self._node_id

    def key(self, topic: TypedTopic[T], address: NodeId | None = None) -> str:
        """The transport key of `topic`; an addressed topic needs the node it is for."""
        if topic.addressed != (address is not None):
            raise ValueError(f"topic {topic.name!r} takes "
                             f"{'a node address' if topic.addressed else 'no address'}")
        base = f"{self._prefix}/{topic.name}"
        return base if address is None else f"{base}/{check_chunk(address)}"

    async def publish(self, topic: TypedTopic[T], value: T, *,
                      yield_first: bool = True) -> None:
        """Send `value` to every subscriber of `topic` (of an addressed topic: its node's).
        `yield_first` off: the caller has just let the loop turn (the master does, before
        each publication)."""
        address = None if topic.address_of is None else topic.address_of(value)
        key = self.key(topic, address)
        if not self._local_delivery:
            await self._transport.publish(key, self._signer.seal(key, to_msgpack(value)))
            return
        # Yield first, as a round trip through the transport did: a loop that publishes
        # (the master indexing a burst of commands) must not starve its readers and the
        # HTTP server (a burst of 64 requests: 2-3x slower without it, measured).
        if yield_first:
            await anyio.lowlevel.checkpoint()
        await self._transport.publish_remote(
            key, lambda: self._signer.seal(key, to_msgpack(value)))
        local = self._local.get(key)
        if local:
            self._hand_over(topic, key, value, local)

    def _hand_over(self, topic: TypedTopic[T], key: str, value: T,
                   subscriptions: list[Subscription]) -> None:
        """Deliver to this router's own subscriptions what opening the sealed value would
        have given them, and drop (and count) what it would have refused."""
        if self._verifier.is_revoked(self._node_id):
            self.dropped.count(topic.name, "revoked_node", 0)
        elif topic.origin_of is not None and topic.origin_of(value) != self._node_id:
            self.dropped.count(topic.name, "forged_origin", 0)
        else:
            message = _HandedOver(key, b"", Received(self._node_id, value))
            for subscription in subscriptions:
                subscription.put(message)

    def announce_membership(self) -> None:
        """Declare this node a member of the namespace for as long as its transport lives."""
        self._transport.declare_liveliness(f"{self._prefix}/members/{self._node_id}")

    def membership(self) -> "MembershipWatch":
        """(node id, alive) for every member now, then for each arrival and departure."""
        return MembershipWatch(self._transport.watch_liveliness(f"{self._prefix}/members/*"))

    def service_key(self, service: str, node_id: NodeId) -> str:
        """The key a node answers `service` queries on (request and response)."""
        return f"{self._prefix}/{check_chunk(service)}/{check_chunk(node_id)}"

    def answer(self, service: str, handler: QueryHandler) -> None:
        """Answer this node's `service` queries with `handler` while the transport lives."""
        self._transport.answer(self.service_key(service, self._node_id), handler)

    def answer_signed(self, service: str, handler: QueryHandler) -> None:
        """Like `answer`, with every reply signed, for askers that must know who answered."""
        key = self.service_key(service, self._node_id)

        def signed(payload: bytes) -> bytes | None:
            reply = handler(payload)
            return None if reply is None else self._signer.seal(key, reply)

        self._transport.answer(key, signed)

    async def ask(self, service: str, node_id: NodeId, payload: bytes,
                  timeout: float) -> bytes | None:
        """`node_id`'s signed answer to a `service` query; None when it does not answer in
        time, or when the answer is not signed by `node_id`."""
        key = self.service_key(service, node_id)
        sealed = await self._transport.query(key, payload, timeout)
        if sealed is None:
            return None
        try:
            origin, reply = self._verifier.open(key, sealed)
        except Rejected as rejected:
            self.dropped.count(service, rejected.reason, len(sealed))
            return None
        if origin != node_id:
            self.dropped.count(service, "forged_origin", len(sealed))
            return None
        return reply

    def subscribe(self, topic: TypedTopic[T]) -> TopicSubscription[T]:
        """Start receiving `topic` now; of an addressed topic, only this node's values.
        Only for topics whose values name their origin (see `subscribe_with_origin`)."""
        if topic.origin_of is None:
            raise ValueError(f"{topic.name!r} values do not name their origin: use "
                             "subscribe_with_origin and check the signer")
        return TopicSubscription(self._opener(topic), self._subscribe(topic), self._forget)

    def subscribe_with_origin(self, topic: TypedTopic[T]) -> OriginSubscription[T]:
        """Like `subscribe`, yielding each value with the node that signed it."""
        return OriginSubscription(self._opener(topic), self._subscribe(topic), self._forget)

    def _subscribe(self, topic: TypedTopic[T]) -> Subscription:
        key = self.key(topic, self._node_id if topic.addressed else None)
        subscription = self._transport.subscribe(key)
        if self._local_delivery:
            self._local.setdefault(key, []).append(subscription)
        return subscription

    def _forget(self, subscription: Subscription) -> None:
        for key, subscriptions in list(self._local.items()):
            if subscription in subscriptions:
                subscriptions.remove(subscription)
                if not subscriptions:
                    del self._local[key]

    def _opener(self, topic: TypedTopic[T]) -> _Opener[T]:
        return _Opener(topic, self._verifier, self.dropped)
