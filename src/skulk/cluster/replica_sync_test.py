"""A follower asks its master for what it may have missed: after a gap it saw, and after
every election round (a tail missed while cut off shows no gap by itself)."""

from dataclasses import dataclass

import anyio
import pytest

from skulk.cluster.local_events import LocalEventSender
from skulk.cluster.replica_sync import SYNC_INTERVAL_SECONDS, ReplicaSync
from skulk.shared.replica import StateReplica
from skulk.shared.types.election import StateSyncMessage
from skulk.shared.types.events import IndexedEvent, TaskDeleted
from skulk.shared.types.ids import NodeId, SessionId, TaskId
from skulk.shared.types.state import State
from skulk.testing.channels import Collected

ME, MASTER = NodeId("node-me"), NodeId("node-master")


@dataclass
class Elected:
    master: NodeId | None


@pytest.mark.anyio
async def test_after_a_round_a_follower_asks_for_what_follows_its_last_index() -> None:
    replica = StateReplica()
    replica.restore(State(last_event_applied_idx=6), SessionId("sess-1"), MASTER)
    election = Elected(MASTER)
    requests: Collected[StateSyncMessage] = Collected()
    asked = requests.items
    sync = ReplicaSync(node_id=ME, replica=replica, election=election, requests=requests)
    sync.catch_up()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(sync.run, LocalEventSender(node_id=ME, epoch="e",
                                                    published=Collected()))
        with anyio.fail_after(5):
            while not asked:
                await anyio.sleep(0.05)
        tasks.cancel_scope.cancel()
    assert [(m.kind, m.session, m.from_index) for m in asked] == [
        ("replay_request", "sess-1", 7)]
    asked.clear()
    election.master = ME
    sync.catch_up()  # the master asks nobody
    assert sync._caught_up_from is None


@pytest.mark.anyio
async def test_after_a_round_a_follower_receiving_events_does_not_ask() -> None:
    replica = StateReplica()
    replica.restore(State(last_event_applied_idx=6), SessionId("sess-1"), MASTER)
    requests: Collected[StateSyncMessage] = Collected()
    sync = ReplicaSync(node_id=ME, replica=replica, election=Elected(MASTER),
                       requests=requests)
    sync.catch_up()
    replica.receive(IndexedEvent(index=7, session=SessionId("sess-1"), master_node=MASTER,
                                 event=TaskDeleted(task_id=TaskId("t"))))
    assert replica.next_index() == 8, "the event arrived after the round"
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(sync.run, LocalEventSender(node_id=ME, epoch="e",
                                                    published=Collected()))
        await anyio.sleep(SYNC_INTERVAL_SECONDS * 2.5)
        tasks.cancel_scope.cancel()
    assert requests.items == [], "events are flowing: a gap among them shows itself"
