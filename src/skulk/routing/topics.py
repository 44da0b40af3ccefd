"""Typed topics: each names its key and the wire type its payloads must decode to."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import CommandEnvelope
from skulk.shared.types.election import ElectionMessage, StateSyncMessage
from skulk.shared.types.events import IndexedEvent, LocalEvent
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

    @property
    def addressed(self) -> bool:
        return self.address_of is not None


def _chunk_owner(chunk: DataChunk) -> NodeId:
    return chunk.owner_node


def _spans_owner(spans: RankSpans) -> NodeId:
    return spans.owner_node


COMMANDS = TypedTopic("commands", CommandEnvelope)
LOCAL_EVENTS = TypedTopic("local_events", LocalEvent)
GLOBAL_EVENTS = TypedTopic("global_events", IndexedEvent)
ELECTION = TypedTopic("election", ElectionMessage)
STATE_SYNC = TypedTopic("state_sync", StateSyncMessage)
TELEMETRY = TypedTopic("telemetry", NodeTelemetry)
DATA = TypedTopic("data", DataChunk, address_of=_chunk_owner)
TRACE_SPANS = TypedTopic("trace_spans", RankSpans, address_of=_spans_owner)

ALL_TOPICS: tuple[TypedTopic[Any], ...] = (
    COMMANDS, LOCAL_EVENTS, GLOBAL_EVENTS, ELECTION, STATE_SYNC, TELEMETRY, DATA,
    TRACE_SPANS)
