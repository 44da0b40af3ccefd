"""What a `Master` is handed besides its catalogue and log: its settings (built once from
the node's flags), the streams it reads, and the view of membership it judges by."""

from collections.abc import AsyncIterable, Set
from dataclasses import dataclass
from typing import Protocol

from skulk.master.idle import DEFAULT_KEEP_ALIVE_SECONDS
from skulk.master.ready_batches import ReadySource
from skulk.shared.partition import Quorum
from skulk.shared.types.commands import CommandEnvelope
from skulk.shared.types.election import StateSyncMessage
from skulk.shared.types.events import LocalEventBatch
from skulk.shared.types.ids import NodeId
from skulk.shared.views import LiveMembers

# Every this many events the master snapshots its State into the log and compacts it.
SNAPSHOT_EVERY_EVENTS = 10_000
# After a master starts, membership is still arriving: instances are not pruned for a
# node's absence before this.
TOPOLOGY_SETTLE_GRACE_SECONDS = 10.0


@dataclass(frozen=True)
class MasterSettings:
    # "majority": a side without a majority of the agreed members indexes nothing.
    quorum: Quorum = "available"
    # `--keep-alive`: an instance idle this long is removed (not one pinned by --serve).
    keep_alive_seconds: float = DEFAULT_KEEP_ALIVE_SECONDS
    settle_grace_seconds: float = TOPOLOGY_SETTLE_GRACE_SECONDS
    reconcile_interval: float = 1.0
    snapshot_every: int = SNAPSHOT_EVERY_EVENTS
    # Followers' sync requests are gathered this long and answered once (sync_requests.py).
    sync_batch_seconds: float = 0.2


@dataclass(frozen=True)
class MasterInbox:
    """What the master reads: commands, workers' local events, followers' sync requests."""

    commands: ReadySource[CommandEnvelope]
    local_events: ReadySource[LocalEventBatch]
    sync_requests: AsyncIterable[StateSyncMessage] | None = None


class MembersView(LiveMembers, Protocol):
    """Membership as this node sees it, read-only: live by their tokens, and among them
    those the last election round heard from (a token can outlive a cut link)."""

    def heard(self) -> Set[NodeId]: ...
