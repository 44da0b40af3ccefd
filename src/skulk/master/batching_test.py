"""What the master indexes together it publishes together: one batch, one signature."""

import math
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from skulk.master import master as master_module
from skulk.master.master import Master
from skulk.master.ready_batches import handle_ready, with_ready
from skulk.master.settings import MasterInbox, MasterSettings
from skulk.models.catalog import ModelCatalog
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import CommandEnvelope, TextGeneration
from skulk.shared.types.election import StateSyncMessage
from skulk.shared.types.events import (
    IndexedBatch,
    LocalEvent,
    LocalEventBatch,
    StateSnapshotHydrated,
    TaskDeleted,
)
from skulk.shared.types.ids import CommandId, NodeId, TaskId
from skulk.testing import factories as f
from skulk.testing.channels import Collected

from .master_test import ListLog


def proposal(seq: int) -> LocalEvent:
    return LocalEvent(origin=f.NODE, epoch="e", origin_seq=seq,  # trusted: its own
                      event=TaskDeleted(task_id=TaskId(f"t{seq}")))


def batched_master(log: ListLog, batches: Collected[IndexedBatch],
                   local_events: list[LocalEvent] | None = None,
                   commands: list[CommandEnvelope] | None = None) -> Master:
    """A master whose inbox already holds `local_events` and `commands`."""
    send_commands, command_stream = anyio.create_memory_object_stream[CommandEnvelope](
        math.inf)
    send_locals, local_stream = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    for local in local_events or []:  # each from its own message, as from 20 nodes
        send_locals.send_nowait(LocalEventBatch(origin=local.origin, events=[local]))
    for command in commands or []:
        send_commands.send_nowait(command)
    return Master(node_id=f.NODE, catalog=ModelCatalog.builtin(Path(".")),
                  telemetry=TelemetryView(), event_log=log,
                  inbox=MasterInbox(commands=command_stream, local_events=local_stream),
                  indexed=batches, settings=MasterSettings(reconcile_interval=60))


async def run_until(m: Master, indexed: int) -> None:
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(m.run)
        with anyio.fail_after(5):
            while m.events_indexed < indexed:
                await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_proposals_ready_together_go_out_in_one_batch() -> None:
    log, batches = ListLog(), Collected[IndexedBatch]()
    m = batched_master(log, batches, local_events=[proposal(seq) for seq in range(20)])
    await run_until(m, 21)
    [[seed], burst] = [batch.events for batch in batches.items]
    assert isinstance(seed.event, StateSnapshotHydrated)
    assert [e.index for e in burst] == list(range(1, 21))
    assert [e.source.origin_seq for e in burst if e.source] == list(range(20))
    assert log.events == [seed, *burst], "the log holds each event, in order, as now"


@pytest.mark.anyio
async def test_a_node_s_batched_proposals_are_indexed_in_order_once_under_one_signature(
) -> None:
    log, batches = ListLog(), Collected[IndexedBatch]()
    send_locals, local_stream = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    # Two messages of one node (the second out of order and repeating one), ready together.
    send_locals.send_nowait(LocalEventBatch(origin=f.NODE, events=[proposal(seq)
                                                                    for seq in (0, 1, 3)]))
    send_locals.send_nowait(LocalEventBatch(origin=f.NODE, events=[proposal(2), proposal(1)]))
    m = Master(node_id=f.NODE, catalog=ModelCatalog.builtin(Path(".")),
               telemetry=TelemetryView(), event_log=log,
               inbox=MasterInbox(commands=anyio.create_memory_object_stream[
                   CommandEnvelope](math.inf)[1], local_events=local_stream),
               indexed=batches, settings=MasterSettings(reconcile_interval=60))
    await run_until(m, 5)
    [[seed], burst] = [batch.events for batch in batches.items]
    assert [e.source.origin_seq for e in burst if e.source] == [0, 1, 2, 3]
    assert [e.index for e in burst] == [1, 2, 3, 4]


@pytest.mark.anyio
async def test_commands_ready_together_are_each_applied_and_published_once() -> None:
    log, batches = ListLog(), Collected[IndexedBatch]()
    commands = [CommandEnvelope(origin=f.NODE, command=TextGeneration(
        command_id=CommandId(f"g{n}"), owner_node=f.NODE, params=f.params()))
        for n in range(3)]
    m = batched_master(log, batches, commands=[*commands, commands[0]])  # one resent
    await run_until(m, 4)
    assert [len(batch.events) for batch in batches.items] == [1, 3]
    assert [e.index for e in log.events] == [0, 1, 2, 3]


@pytest.mark.anyio
async def test_a_replay_goes_out_in_stretches_of_the_batch_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(master_module, "MAX_BATCH_EVENTS", 2)
    log, batches = ListLog(), Collected[IndexedBatch]()
    m = batched_master(log, batches)
    await m.index([StateSnapshotHydrated(state=m.state)])
    await m.handle_local_events([proposal(seq) for seq in range(4)])
    assert [[e.index for e in b.events] for b in batches.items] == [[0], [1, 2], [3, 4]]
    batches.items.clear()
    await m.handle_sync(StateSyncMessage(kind="replay_request", node_id=NodeId("b"),
                                         session=m.session_id, from_index=0))
    assert [[e.index for e in b.events] for b in batches.items] == [[0, 1], [2, 3], [4]]


@pytest.mark.anyio
async def test_ready_batches_take_what_arrived_up_to_the_bound_and_wait_for_the_next() -> None:
    send, receive = anyio.create_memory_object_stream[int](math.inf)
    taken: list[list[int]] = []

    async def handle(batch: list[int]) -> None:
        taken.append(batch)

    async with anyio.create_task_group() as tasks:
        for item in range(5):
            send.send_nowait(item)
        tasks.start_soon(lambda: handle_ready(receive, handle, most=3))
        with anyio.fail_after(1):
            while len(taken) < 2:
                await anyio.sleep(0.01)
        assert taken == [[0, 1, 2], [3, 4]]
        await anyio.sleep(0.05)
        assert len(taken) == 2, "nothing ready: it waits"
        send.send_nowait(5)
        with anyio.fail_after(1):
            while len(taken) < 3:
                await anyio.sleep(0.01)
        assert taken[2] == [5]
        send.close()
    assert len(taken) == 3, "the source ended: so does the reader"


@pytest.mark.anyio
async def test_with_ready_lets_the_loop_turn_once_and_takes_what_came_in_it() -> None:
    """An item alone costs one turn of the loop; one sent during that turn joins it."""
    send, receive = anyio.create_memory_object_stream[int](math.inf)
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(count_turns)
        await anyio.lowlevel.checkpoint()
        turns = 0
        assert await with_ready(0, receive, most=10) == [0]
        assert turns == 1, "alone: one turn"

        async def send_one() -> None:
            send.send_nowait(1)

        tasks.start_soon(send_one)  # runs in the reader's turn
        assert await with_ready(0, receive, most=10) == [0, 1]
        tasks.cancel_scope.cancel()
    send.send_nowait(2)
    send.send_nowait(3)
    assert await with_ready(9, receive, most=2) == [9, 2], "the bound, and the turn owed"
