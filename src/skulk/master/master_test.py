import math
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from skulk.master.master import Master
from skulk.master.settings import MasterInbox, MasterSettings
from skulk.models.catalog import ModelCatalog
from skulk.shared.partition import Quorum
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import CommandEnvelope, TaskFinished, TextGeneration
from skulk.shared.types.events import (
    CommandRejected,
    IndexedEvent,
    InstanceCreated,
    LocalEvent,
    LocalEventBatch,
    StateSnapshotHydrated,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import CommandId, NodeId, TaskId
from skulk.testing import factories as f
from skulk.testing.channels import Collected, each_indexed_event


class ListLog:
    def __init__(self) -> None:
        self.events: list[IndexedEvent] = []

    def append(self, event: IndexedEvent) -> None:
        self.events.append(event)

    def compact(self, snapshot: IndexedEvent) -> None:
        self.events = [snapshot]

    def read_range(self, start: int, end: int) -> list[IndexedEvent]:
        return [e for e in self.events if start <= e.index < end]


def master(log: ListLog, published: list[IndexedEvent],
           settings: MasterSettings | None = None) -> Master:
    never_send, never = anyio.create_memory_object_stream[CommandEnvelope](math.inf)
    never_send2, never2 = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    return Master(node_id=f.NODE, catalog=ModelCatalog.builtin(Path(".")),
                  telemetry=TelemetryView(), event_log=log,
                  inbox=MasterInbox(commands=never, local_events=never2),
                  indexed=each_indexed_event(published), settings=settings)


@dataclass
class FixedMembers:
    """Membership as a test sets it: live members, and those the last round heard."""

    live: set[NodeId]
    heard_from: set[NodeId] = field(default_factory=set)

    def heard(self) -> set[NodeId]:
        return self.live & self.heard_from


@pytest.mark.anyio
async def test_events_from_every_origin_get_one_contiguous_order() -> None:
    log = ListLog()
    published: list[IndexedEvent] = []
    m = master(log, published)
    await m.index([StateSnapshotHydrated(state=m.state)])
    await m.handle_local_event(LocalEvent(origin=f.NODE, epoch="e1", origin_seq=0,
                                          event=InstanceCreated(instance=f.instance())))
    await m.handle_command(CommandEnvelope(origin=f.NODE, command=TextGeneration(
        command_id=CommandId("g1"), owner_node=f.NODE, params=f.params())))
    assert [e.index for e in published] == [0, 1, 2]
    assert log.events == published
    assert isinstance(published[2].event, TaskCreated)
    assert m.state.last_event_applied_idx == 2 and len({e.session for e in published}) == 1


@pytest.mark.anyio
async def test_resent_local_events_and_commands_are_indexed_once() -> None:
    log = ListLog()
    published: list[IndexedEvent] = []
    m = master(log, published)
    await m.index([StateSnapshotHydrated(state=m.state)])
    local = LocalEvent(origin=f.NODE, epoch="e1", origin_seq=0,
                       event=InstanceCreated(instance=f.instance()))
    await m.handle_local_event(local)
    await m.handle_local_event(local)
    restarted = local.model_copy(update={"epoch": "e2",
                                         "event": InstanceCreated(instance=f.instance("i2"))})
    await m.handle_local_event(restarted)  # a restarted producer counts from 0 again
    command = CommandEnvelope(origin=f.NODE, command=TextGeneration(
        command_id=CommandId("g1"), owner_node=f.NODE,
        params=f.params().model_copy(update={"model_id": "nope"})))
    await m.handle_command(command)
    await m.handle_command(command)
    kinds = [type(e.event).__name__ for e in published]
    assert kinds == ["StateSnapshotHydrated", "InstanceCreated", "InstanceCreated",
                     "CommandRejected"]
    assert isinstance(published[-1].event, CommandRejected)


@pytest.mark.anyio
async def test_a_status_for_a_task_already_deleted_is_not_indexed_nor_remembered() -> None:
    """The client's `TaskFinished` often reaches the master before the runner's
    `complete`: that status would change nothing, so it takes no index, no log entry and
    no place among the finished tasks to forget (which only tasks still held leave)."""
    log = ListLog()
    published: list[IndexedEvent] = []
    m = master(log, published)
    worker = NodeId("node-b")  # the runner's node, not the master's
    await m.index([StateSnapshotHydrated(state=m.state),
                   InstanceCreated(instance=f.instance(node=worker)),
                   TaskCreated(task=f.task())])
    await m.handle_command(CommandEnvelope(origin=f.NODE, command=TaskFinished(
        command_id=CommandId("fin"), target_command_id=f.task().command_id)))
    assert isinstance(published[-1].event, TaskDeleted)
    for seq, status in enumerate([TaskStatusUpdated(task_id=TaskId("task-1"), status="running"),
                                  TaskStatusUpdated(task_id=TaskId("task-1"), status="complete")]):
        await m.handle_local_event(LocalEvent(origin=worker, epoch="e", origin_seq=seq,
                                              event=status))
    assert isinstance(published[-1].event, TaskDeleted) and log.events == published
    assert m.moot_local_events == 2 and m.refused_local_events.total() == 0
    await m.reconcile_once()
    assert not m._terminal_since  # noqa: SLF001 - the leak this guards against


@pytest.mark.anyio
async def test_the_master_compacts_and_answers_old_replays_with_a_snapshot() -> None:
    from skulk.shared.types.election import StateSyncMessage

    log = ListLog()
    published: list[IndexedEvent] = []
    m = master(log, published, MasterSettings(snapshot_every=4))
    await m.index([StateSnapshotHydrated(state=m.state)])
    for seq in range(5):
        await m.handle_local_event(LocalEvent(origin=f.NODE, epoch="e", origin_seq=seq,
                                              event=InstanceCreated(instance=f.instance())))
    assert [e.index for e in log.events] == [3, 4, 5]
    assert isinstance(log.events[0].event, StateSnapshotHydrated)
    published.clear()
    await m.handle_sync(StateSyncMessage(kind="replay_request", node_id=f.NODE,
                                         session=m.session_id, from_index=1))
    [answer] = published
    assert isinstance(answer.event, StateSnapshotHydrated) and answer.index == 5
    published.clear()
    await m.handle_sync(StateSyncMessage(kind="replay_request", node_id=f.NODE,
                                         session=m.session_id, from_index=4))
    assert [e.index for e in published] == [4, 5]
    published.clear()
    await m.handle_sync(StateSyncMessage(kind="replay_request", node_id=f.NODE,
                                         session=m.session_id, from_index=6))
    assert published == [], "a follower that has everything is sent nothing"


def minority_master(quorum: Quorum) -> tuple[Master, list[IndexedEvent]]:
    """A master that sees 1 of the 3 agreed members."""
    published: list[IndexedEvent] = []
    _, commands = anyio.create_memory_object_stream[CommandEnvelope](math.inf)
    _, local_events = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    m = Master(node_id=f.NODE, catalog=ModelCatalog.builtin(Path(".")),
               telemetry=TelemetryView(), event_log=ListLog(),
               inbox=MasterInbox(commands=commands, local_events=local_events),
               indexed=each_indexed_event(published),
               members=FixedMembers(live={f.NODE}, heard_from={f.NODE}),
               settings=MasterSettings(quorum=quorum))
    return m, published


@pytest.mark.anyio
async def test_a_minority_master_keeps_what_it_accepted_or_under_strict_quorum_nothing(
) -> None:
    from skulk.shared.types.commands import DeleteInstance
    from skulk.shared.types.ids import InstanceId, NodeId

    quorums: tuple[Quorum, ...] = ("available", "majority")
    for quorum in quorums:
        m, published = minority_master(quorum)
        seed = f.state_with(InstanceCreated(instance=f.instance())).model_copy(
            update={"members": [f.NODE, NodeId("node-b"), NodeId("node-c")]})
        await m.index([StateSnapshotHydrated(state=seed)])  # what `run` starts with
        await m.handle_command(CommandEnvelope(origin=f.NODE, command=TextGeneration(
            command_id=CommandId("g"), owner_node=f.NODE, params=f.params())))
        served = any(isinstance(e.event, TaskCreated) for e in published)
        await m.handle_command(CommandEnvelope(origin=f.NODE, command=DeleteInstance(
            command_id=CommandId("d"), instance_id=InstanceId("inst-1"))))
        if quorum == "available":
            assert served, "it serves"
            assert "inst-1" not in m.state.instances, "it accepts, since it cannot tell"
            assert [c.command_id for c in m.carried] == ["d"], "and keeps it for the heal"
        else:
            assert "inst-1" in m.state.instances and m.carried == []
            assert len(published) == 1, "under --quorum majority it indexes nothing"


@pytest.mark.anyio
async def test_the_master_logs_each_removal_with_the_reason_its_command_gave() -> None:
    from loguru import logger

    from skulk.shared.types.commands import DeleteInstance
    from skulk.shared.types.ids import InstanceId

    lines: list[str] = []
    sink = logger.add(lines.append, level="INFO", format="{message}")
    try:
        m = master(ListLog(), [])
        await m.index([StateSnapshotHydrated(state=m.state),
                       InstanceCreated(instance=f.instance())])
        await m.handle_command(CommandEnvelope(origin=f.NODE, command=DeleteInstance(
            command_id=CommandId("d"), instance_id=InstanceId("inst-1"),
            reason="node a gave it up: no weights")))
    finally:
        logger.remove(sink)
    assert any(line.strip() == f"instance inst-1 of {f.instance().model_id} removed: node a "
               "gave it up: no weights" for line in lines), lines


def test_a_side_counts_only_the_members_it_heard_from_toward_its_majority() -> None:
    """Tokens of the other side can outlive a cut by a lease: they are not a majority."""
    from skulk.shared.types.ids import NodeId

    b, c = NodeId("node-b"), NodeId("node-c")
    _, commands = anyio.create_memory_object_stream[CommandEnvelope](math.inf)
    _, local_events = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    members = FixedMembers(live={f.NODE, b, c}, heard_from={f.NODE})
    m = Master(node_id=f.NODE, catalog=ModelCatalog.builtin(Path(".")),
               telemetry=TelemetryView(), event_log=ListLog(),
               inbox=MasterInbox(commands=commands, local_events=local_events),
               indexed=Collected(), members=members)
    m._state = m._state.model_copy(update={"members": [f.NODE, b, c]})
    assert not m.standing().majority
    members.heard_from = {f.NODE, b}
    assert m.standing().majority
