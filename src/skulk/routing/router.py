"""The router: typed topics over a transport, keys prefixed by the cluster namespace.

Keys are `skulk/<fingerprint>/<topic>[/<node id>]`. The fingerprint stands in for the
namespace everywhere, so the raw namespace is never sent or logged.
"""

import hashlib
from types import TracebackType
from typing import Generic, Self, TypeVar

from loguru import logger
from pydantic import BaseModel

from skulk.routing.keys import check_chunk
from skulk.routing.topics import TypedTopic
from skulk.routing.transport import ALIVE, QueryHandler, Subscription, Transport
from skulk.shared.types.ids import NodeId
from skulk.shared.types.wire import from_msgpack, to_msgpack

T = TypeVar("T", bound=BaseModel)


def namespace_fingerprint(namespace: str) -> str:
    """The key chunk that stands for `namespace`: 16 hex chars of its sha256."""
    return hashlib.sha256(namespace.encode()).hexdigest()[:16]


class _ClosingSubscription:
    """Owns a transport subscription: `close()` ends it, and so does leaving `async with`."""

    def __init__(self, subscription: Subscription) -> None:
        self._subscription = subscription

    def close(self) -> None:
        """Stop receiving; iteration ends."""
        self._subscription.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, error_type: type[BaseException] | None,
                        error: BaseException | None, traceback: TracebackType | None) -> None:
        self.close()


class TopicSubscription(_ClosingSubscription, Generic[T]):
    """Decoded values of one topic; use as `async with router.subscribe(topic) as values`.

    Undecodable payloads are logged and skipped. A cancelled wait loses nothing, so the
    same subscription can be read under `anyio.move_on_after` and read again.
    """

    def __init__(self, topic: TypedTopic[T], subscription: Subscription) -> None:
        super().__init__(subscription)
        self._topic = topic

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        while True:
            message = await anext(self._subscription)
            try:
                return from_msgpack(self._topic.model, message.payload)
            except ValueError as error:
                # The error text can quote the payload, so only its class is logged.
                logger.warning("dropped an undecodable {} message ({} bytes, {})",
                               self._topic.name, len(message.payload), type(error).__name__)



class MembershipWatch(_ClosingSubscription):
    """Use as `async with router.membership() as changes: async for node, alive in changes`."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> tuple[NodeId, bool]:
        message = await anext(self._subscription)
        return NodeId(message.key.rsplit("/", 1)[-1]), message.payload == ALIVE


class Router:
    """Publishes and subscribes typed values on one namespace of a transport."""

    def __init__(self, transport: Transport, *, namespace: str, node_id: NodeId) -> None:
        self._transport = transport
        self._prefix = f"skulk/{namespace_fingerprint(namespace)}"
        self._node_id = NodeId(check_chunk(node_id))

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

    async def publish(self, topic: TypedTopic[T], value: T) -> None:
        """Send `value` to every subscriber of `topic` (of an addressed topic: its node's)."""
        address = None if topic.address_of is None else topic.address_of(value)
        await self._transport.publish(self.key(topic, address), to_msgpack(value))

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

    def subscribe(self, topic: TypedTopic[T]) -> TopicSubscription[T]:
        """Start receiving `topic` now; of an addressed topic, only this node's values."""
        address = self._node_id if topic.addressed else None
        return TopicSubscription(topic, self._transport.subscribe(self.key(topic, address)))
