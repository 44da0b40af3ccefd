"""Election and state-sync messages (the multi-node protocol builds on these)."""

from typing import Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import NodeId, SessionId


class ElectionMessage(WireModel):
    """A node's campaign: the max of (clock, seniority, commands_seen, node_id) wins."""

    node_id: NodeId = Field(description="Campaigning node.")
    clock: int = Field(description="Election round the node is in.")
    seniority: int = Field(description="How long the node has been master, or forced.")
    commands_seen: int = Field(description="Commands the node has observed.")


class StateSyncMessage(WireModel):
    """A follower asks for a snapshot or a replay; the master answers."""

    kind: Literal["snapshot_request", "replay_request"] = Field(description="What is asked.")
    node_id: NodeId = Field(description="Asking node.")
    session: SessionId | None = Field(default=None, description="Session asked about.")
    from_index: int = Field(default=0, description="First index wanted (replay).")
