import math
from pathlib import Path

import anyio
import pytest

from skulk.master.master import Master
from skulk.master.master_test import ListLog
from skulk.master.settings import MasterInbox, MasterSettings
from skulk.master.sync_requests import SyncRequests, WantedSync
from skulk.models.catalog import ModelCatalog
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import CommandEnvelope
from skulk.shared.types.election import StateSyncMessage
from skulk.shared.types.events import IndexedEvent, LocalEventBatch, StateSnapshotHydrated
from skulk.shared.types.ids import NodeId, SessionId
from skulk.testing import factories as f
from skulk.testing.channels import each_indexed_event

SESSION = SessionId("s1")


def replay(node: str, from_index: int, session: SessionId = SESSION) -> StateSyncMessage:
    return StateSyncMessage(kind="replay_request", node_id=NodeId(node), session=session,
                            from_index=from_index)


def test_replays_gather_into_one_from_the_earliest_index() -> None:
    gathered = SyncRequests(SESSION)
    for node, start in (("a", 7), ("b", 3), ("c", 5)):
        gathered.add(replay(node, start))
    assert gathered.take() == WantedSync(replay_from=3)
    assert gathered.take() == WantedSync()


def test_a_snapshot_request_or_another_sessions_replay_wants_a_snapshot() -> None:
    gathered = SyncRequests(SESSION)
    gathered.add(replay("a", 4, session=SessionId("old")))
    assert gathered.take() == WantedSync(snapshot=True)
    gathered.add(StateSyncMessage(kind="snapshot_request", node_id=NodeId("b")))
    gathered.add(replay("c", 2))
    assert gathered.take() == WantedSync(snapshot=True, replay_from=2)


@pytest.mark.anyio
async def test_the_master_answers_a_periods_requests_once() -> None:
    published: list[IndexedEvent] = []
    ask, requests = anyio.create_memory_object_stream[StateSyncMessage](math.inf)
    _, commands = anyio.create_memory_object_stream[CommandEnvelope](math.inf)
    _, local_events = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    m = Master(node_id=f.NODE, catalog=ModelCatalog.builtin(Path(".")),
               telemetry=TelemetryView(), event_log=ListLog(),
               inbox=MasterInbox(commands=commands, local_events=local_events,
                                 sync_requests=requests),
               indexed=each_indexed_event(published),
               settings=MasterSettings(sync_batch_seconds=0.05, reconcile_interval=60))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(m.run)
        with anyio.fail_after(5):
            while not published:
                await anyio.sleep(0.01)
        for node in range(50):  # fifty followers missing the seed after a round
            await ask.send(replay(f"n{node}", 0, session=m.session_id))
        with anyio.fail_after(5):
            while len(published) < 2:
                await anyio.sleep(0.01)
        await anyio.sleep(0.2)
        tasks.cancel_scope.cancel()
    [seed, replayed] = published
    assert isinstance(seed.event, StateSnapshotHydrated) and replayed == seed
