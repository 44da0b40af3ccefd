"""What a node does when the cluster changes: the loops that read the node's in-process
channels (election results, members that left) and the events its replica applied, and
hand each to the parts it concerns."""

from collections.abc import AsyncIterable
from pathlib import Path

from anyio.abc import TaskGroup

from skulk.api.data_plane import DataPlaneReceiver
from skulk.api.stream_failures import end_failed_streams, fail_streams_served_by
from skulk.api.streams import StreamRegistry
from skulk.cluster.local_events import LocalEventSender
from skulk.cluster.master_seat import MasterSeat
from skulk.cluster.membership import Membership
from skulk.cluster.replica_sync import ReplicaSync
from skulk.master.event_log_restore import note_followed_session
from skulk.shared.replica import StateReplica
from skulk.shared.types.events import NodeRevoked, StateSnapshotHydrated
from skulk.shared.types.ids import NodeId
from skulk.trust.revocations import save_revoked


async def follow_elections(results: AsyncIterable[NodeId], *, replica: StateReplica,
                           sync: ReplicaSync, seat: MasterSeat) -> None:
    """Each election result: the replica follows the master, asks it for what it may
    have missed, and the master seat is taken or left."""
    async for master in results:
        replica.follow_master(master)
        sync.catch_up()
        seat.elected(master)


async def end_streams_of_departed(departures: AsyncIterable[NodeId], *,
                                  replica: StateReplica, streams: StreamRegistry) -> None:
    """A member that left ends at once every stream its ranks served."""
    async for node in departures:
        fail_streams_served_by(node, replica.state, streams)


async def react_to_applied_events(*, replica: StateReplica, local_events: LocalEventSender,
                                  streams: StreamRegistry, data_plane: DataPlaneReceiver,
                                  members: Membership, data_dir: Path, event_log_dir: Path,
                                  tasks: TaskGroup) -> None:
    """Applied events acknowledge this node's local events, end the streams a failure
    concerns, release chunks that waited for their task, expel a revoked member (and
    refuse its links from the next start), and record the session followed."""
    async with replica.subscribe() as applied:
        async for indexed in applied:
            state = replica.state
            local_events.acknowledge(state)
            end_failed_streams(indexed.event, state, streams, tasks)
            data_plane.state_changed(state)
            if isinstance(indexed.event, NodeRevoked):
                save_revoked(data_dir, list(state.revoked_nodes))
                members.expel(indexed.event.node_id)
            if isinstance(indexed.event, StateSnapshotHydrated):
                note_followed_session(event_log_dir, indexed.session)
