"""Typed topics: each names its key and the wire type its payloads must decode to."""

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import CommandEnvelope
from skulk.shared.types.election import ElectionMessage, StateSyncMessage
from skulk.shared.types.events import IndexedEvent, LocalEvent
from skulk.shared.types.telemetry import NodeTelemetry

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class TypedTopic(Generic[T]):
    """`addressed` topics carry a node id as their last key chunk (`data/<owner>`)."""

    name: str
    model: type[T]
    addressed: bool = False


COMMANDS = TypedTopic("commands", CommandEnvelope)
LOCAL_EVENTS = TypedTopic("local_events", LocalEvent)
GLOBAL_EVENTS = TypedTopic("global_events", IndexedEvent)
ELECTION = TypedTopic("election", ElectionMessage)
STATE_SYNC = TypedTopic("state_sync", StateSyncMessage)
TELEMETRY = TypedTopic("telemetry", NodeTelemetry)
DATA = TypedTopic("data", DataChunk, addressed=True)

ALL_TOPICS: tuple[TypedTopic[BaseModel], ...] = (
    COMMANDS, LOCAL_EVENTS, GLOBAL_EVENTS, ELECTION, STATE_SYNC, TELEMETRY, DATA)  # type: ignore[assignment]
