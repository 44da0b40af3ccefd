"""The router: typed topics over a transport, keys prefixed by the cluster namespace."""

import contextlib
import hashlib
from collections.abc import AsyncIterator
from typing import TypeVar

from loguru import logger
from pydantic import BaseModel

from skulk.routing.topics import TypedTopic
from skulk.routing.transport import Transport
from skulk.shared.types.ids import NodeId
from skulk.shared.types.wire import from_msgpack, to_msgpack

T = TypeVar("T", bound=BaseModel)


def namespace_fingerprint(namespace: str) -> str:
    """The key segment for a namespace; the raw namespace is never sent or logged."""
    return hashlib.sha256(namespace.encode()).hexdigest()[:16]


class Router:
    """Publishes and subscribes wire values; undecodable payloads are logged and dropped."""

    def __init__(self, transport: Transport, *, namespace: str, node_id: NodeId) -> None:
        self._transport = transport
        self._prefix = f"skulk/{namespace_fingerprint(namespace)}"
        self.node_id = node_id

    def key(self, topic: TypedTopic[T], address: str | None = None) -> str:
        if topic.addressed:
            if address is None:
                raise ValueError(f"topic {topic.name} needs an address")
            return f"{self._prefix}/{topic.name}/{address}"
        return f"{self._prefix}/{topic.name}"

    async def publish(self, topic: TypedTopic[T], value: T) -> None:
        address = getattr(value, "owner_node", None) if topic.addressed else None
        await self._transport.publish(self.key(topic, address), to_msgpack(value))

    @contextlib.asynccontextmanager
    async def subscribe(self, topic: TypedTopic[T]) -> AsyncIterator[AsyncIterator[T]]:
        """Values of `topic`; for an addressed topic, only those addressed to this node."""
        subscription = self._transport.subscribe(self.key(topic, self.node_id))
        try:
            yield self._decoded(topic, subscription)
        finally:
            subscription.close()

    async def _decoded(self, topic: TypedTopic[T], subscription: object) -> AsyncIterator[T]:
        async for message in subscription:  # type: ignore[attr-defined]
            try:
                yield from_msgpack(topic.model, message.payload)
            except ValueError as error:
                logger.warning("dropped an undecodable {} message ({} bytes): {}",
                               topic.name, len(message.payload), str(error)[:200])
