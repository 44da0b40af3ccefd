"""Which producer proposed an indexed event (its own module: State and events both use it)."""

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import NodeId


class EventSource(WireModel):
    """Which producer proposed an indexed event, so the producer can stop resending it."""

    origin: NodeId = Field(description="Node that produced the event.")
    epoch: str = Field(description="The producer's start epoch.")
    origin_seq: int = Field(description="Sequence within (origin, epoch).")

    def covers(self, epoch: str, origin_seq: int) -> bool:
        """Whether the event (epoch, origin_seq) of the same producer is at or below this."""
        return epoch == self.epoch and origin_seq <= self.origin_seq
