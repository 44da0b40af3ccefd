"""Typed topics: each names its key and the wire type its payloads must decode to."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import CommandEnvelope
from skulk.shared.types.election import ElectionMessage, StateSyncMessage
from skulk.shared.types.events import IndexedBatch, LocalEventBatch
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.shared.types.traces import RankSpans

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class TypedTopic(Generic[T]):
    """A topic name and its wire type; an addressed topic is keyed `<name>/<node id>`."""

    name: str
    model: type[T]
    # For an addressed topic: which node a value is for. Each node hears only its own.
    address_of: Callable[[T], NodeId] | None = None
    # The node a value claims to come from, which must be the node that signed it. None for
    # values that do not say (their receivers check the signer themselves).
    origin_of: Callable[[T], NodeId] | None = None

    @property
    def addressed(self) -> bool:
        return self.address_of is not None


def _chunk_owner(chunk: DataChunk) -> NodeId:
    return chunk.owner_node


def _spans_owner(spans: RankSpans) -> NodeId:
    return spans.owner_node


COMMANDS = TypedTopic("commands", CommandEnvelope,
                      origin_of=lambda envelope: envelope.origin)
# A node's proposals travel in batches (what was ready together, one signature), signed by
# the node that made them.
LOCAL_EVENTS = TypedTopic("local_events", LocalEventBatch, origin_of=lambda batch: batch.origin)
# Indexed events travel in batches (one or more consecutive events under one signature),
# signed by the master that indexed them; replicas follow only the elected one.
GLOBAL_EVENTS = TypedTopic("global_events", IndexedBatch,
                           origin_of=lambda batch: batch.master_node)
ELECTION = TypedTopic("election", ElectionMessage, origin_of=lambda vote: vote.node_id)
STATE_SYNC = TypedTopic("state_sync", StateSyncMessage,
                        origin_of=lambda request: request.node_id)
TELEMETRY = TypedTopic("telemetry", NodeTelemetry, origin_of=lambda reading: reading.node_id)
# Chunks and spans come from the nodes running the request's ranks: the receiving node
# checks the signer against the instance serving the request.
DATA = TypedTopic("data", DataChunk, address_of=_chunk_owner)
TRACE_SPANS = TypedTopic("trace_spans", RankSpans, address_of=_spans_owner)

ALL_TOPICS: tuple[TypedTopic[Any], ...] = (
    COMMANDS, LOCAL_EVENTS, GLOBAL_EVENTS, ELECTION, STATE_SYNC, TELEMETRY, DATA,
    TRACE_SPANS)
