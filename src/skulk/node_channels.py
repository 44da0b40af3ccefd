"""The ends a node's components send on, each bound to a router topic, and the topics
every node reads.

docs/architecture.md ("How a node is wired") lists who sends on each end and who receives
what it carries.
"""

from dataclasses import dataclass
from typing import Generic, TypeVar

from anyio.abc import TaskGroup
from pydantic import BaseModel

from skulk.api.data_plane import DataPlaneReceiver
from skulk.routing import topics
from skulk.routing.held_open import open_in
from skulk.routing.router import Router
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import Command, CommandEnvelope
from skulk.shared.types.election import ElectionMessage, StateSyncMessage
from skulk.shared.types.events import IndexedBatch, LocalEventBatch
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.shared.types.traces import RankSpans

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class TopicSender(Generic[T]):
    """A `Sender[T]` that publishes on `topic` (sealed by the router, to every member or
    to the address the topic reads from each value)."""

    router: Router
    topic: topics.TypedTopic[T]
    # Off only where every sender lets the loop turn before each send (the master).
    yield_first: bool = True

    async def send(self, item: T, /) -> None:
        await self.router.publish(self.topic, item, yield_first=self.yield_first)


@dataclass(frozen=True)
class CommandSender:
    """A `Sender[Command]` to the master: each command goes out in an envelope naming this
    node as its origin."""

    router: Router
    origin: NodeId

    async def send(self, command: Command, /) -> None:
        await self.router.publish(topics.COMMANDS,
                                  CommandEnvelope(origin=self.origin, command=command))


@dataclass(frozen=True)
class NodeChannels:
    """Every end the node's parts send on, built once the router exists."""

    commands: CommandSender
    local_events: TopicSender[LocalEventBatch]
    indexed: TopicSender[IndexedBatch]
    election: TopicSender[ElectionMessage]
    sync: TopicSender[StateSyncMessage]
    readings: TopicSender[NodeTelemetry]
    chunks: TopicSender[DataChunk]
    spans: TopicSender[RankSpans]

    @classmethod
    def on(cls, router: Router, node_id: NodeId) -> "NodeChannels":
        return cls(commands=CommandSender(router, node_id),
                   local_events=TopicSender(router, topics.LOCAL_EVENTS),
                   # The master yields before each of its publications (master.py).
                   indexed=TopicSender(router, topics.GLOBAL_EVENTS, yield_first=False),
                   election=TopicSender(router, topics.ELECTION),
                   sync=TopicSender(router, topics.STATE_SYNC),
                   readings=TopicSender(router, topics.TELEMETRY),
                   chunks=TopicSender(router, topics.DATA),
                   spans=TopicSender(router, topics.TRACE_SPANS))


async def receive_planes(tasks: TaskGroup, router: Router, *, replica: StateReplica,
                         telemetry: TelemetryView, data_plane: DataPlaneReceiver) -> None:
    """Start reading the topics every node reads: indexed events into the replica,
    readings into the telemetry view, chunks and rank spans into the data plane."""
    indexed = await open_in(tasks, router.subscribe(topics.GLOBAL_EVENTS))
    tasks.start_soon(replica.run, indexed)
    readings = await open_in(tasks, router.subscribe(topics.TELEMETRY))
    tasks.start_soon(telemetry.follow, readings)
    chunks = await open_in(tasks, router.subscribe_with_origin(topics.DATA))
    tasks.start_soon(data_plane.receive_chunks, chunks, replica)
    spans = await open_in(tasks, router.subscribe_with_origin(topics.TRACE_SPANS))
    tasks.start_soon(data_plane.receive_spans, spans, replica)
