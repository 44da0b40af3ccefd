from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from skulk.cluster.local_events import GIVE_UP_SECONDS, LocalEventSender
from skulk.shared.types.event_source import EventSource
from skulk.shared.types.events import (
    MAX_PROPOSALS_TOGETHER,
    InstanceCreated,
    LocalEventBatch,
    RunnerStatusUpdated,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import NodeId, RunnerId, TaskId
from skulk.shared.types.runners import RunnerReady
from skulk.shared.types.state import State
from skulk.testing import factories as f
from skulk.testing.channels import Collected


def sent(published: Collected[LocalEventBatch]) -> list[int]:
    """The sequence numbers sent, batch after batch."""
    return [local.origin_seq for batch in published.items for local in batch.events]


def marked(epoch: str, origin_seq: int) -> State:
    """A State (replayed or adopted from a snapshot) whose newest event from `a` is given."""
    return State(producer_marks={
        NodeId("a"): EventSource(origin=NodeId("a"), epoch=epoch, origin_seq=origin_seq)})


@asynccontextmanager
async def running(published: Collected[LocalEventBatch], now: list[float] | None = None
                  ) -> AsyncIterator[LocalEventSender]:
    """A sender of node `a` whose own task runs inside the block."""
    clock = (lambda: now[0]) if now is not None else (lambda: 0.0)
    sender = LocalEventSender(node_id=NodeId("a"), epoch="e", published=published,
                              clock=clock)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(sender.run)
        yield sender
        tasks.cancel_scope.cancel()


async def settled(sender: LocalEventSender) -> None:
    """Until the sender's task sent what its outbox held (a few turns; never a timer)."""
    with anyio.fail_after(1):
        await anyio.lowlevel.checkpoint()
        while not sender.all_sent:
            await anyio.lowlevel.checkpoint()


@pytest.mark.anyio
async def test_events_are_resent_with_backoff_until_indexed_then_given_up() -> None:
    now = [0.0]
    published: Collected[LocalEventBatch] = Collected()
    async with running(published, now) as sender:
        await sender.send(TaskDeleted(task_id=TaskId("t1")))
        await sender.send(TaskDeleted(task_id=TaskId("t2")))
        await settled(sender)
        assert sent(published) == [0, 1]
        sender.acknowledge(marked(epoch="e", origin_seq=0))
        now[0] = 1.0
        await sender.resend_due()
        await settled(sender)
        assert sent(published) == [0, 1, 1]
        now[0] = 2.0
        await sender.resend_due()  # backed off: the next resend is 2 s later
        await settled(sender)
        assert len(sent(published)) == 3
        now[0] = 3.0
        await sender.resend_due()
        await settled(sender)
        assert len(sent(published)) == 4
        now[0] = GIVE_UP_SECONDS + 1
        await sender.resend_due()
        assert sender.pending == 0


@pytest.mark.anyio
async def test_a_state_mark_acknowledges_everything_at_or_below_it_in_the_same_epoch() -> None:
    sender = LocalEventSender(node_id=NodeId("a"), epoch="e2", published=Collected())
    for n in range(3):
        await sender.send(TaskDeleted(task_id=TaskId(f"t{n}")))
    sender.acknowledge(marked(epoch="e1", origin_seq=5))
    assert sender.pending == 3, "a mark from an earlier start acknowledges nothing"
    sender.acknowledge(marked(epoch="e2", origin_seq=1))
    assert sender.pending == 1
    assert not sender.all_sent, "its task does not run: nothing left"


@pytest.mark.anyio
async def test_the_first_resend_waits_as_long_as_indexing_takes_here() -> None:
    now = [0.0]
    published: Collected[LocalEventBatch] = Collected()
    async with running(published, now) as sender:
        for seq in range(8):  # a busy master: each event indexed 2.5 s after it was sent
            await sender.send(TaskDeleted(task_id=TaskId(f"t{seq}")))
            await settled(sender)
            now[0] += 2.5
            sender.acknowledge(marked(epoch="e", origin_seq=seq))
        assert 2.5 <= sender.indexing_time.first_resend() <= 8.0
        await sender.send(TaskDeleted(task_id=TaskId("late")))
        await settled(sender)
        now[0] += 2.0
        await sender.resend_due()
        await settled(sender)
        assert len(published.items) == 9, "not resent before indexing usually takes"
        now[0] += 6.0
        await sender.resend_due()
        await settled(sender)
        assert len(published.items) == 10, "resent once overdue"


@pytest.mark.anyio
async def test_proposals_ready_in_one_turn_leave_as_one_batch_and_a_lone_one_at_once(
) -> None:
    published: Collected[LocalEventBatch] = Collected()
    async with running(published) as sender:
        await sender.send(TaskDeleted(task_id=TaskId("alone")))
        await settled(sender)  # never a timer: a lone proposal leaves within a few turns
        assert [len(batch.events) for batch in published.items] == [1]
        async with anyio.create_task_group() as tasks:  # five producers in the same turn
            for n in range(5):
                tasks.start_soon(sender.send, TaskDeleted(task_id=TaskId(f"t{n}")))
        for n in range(3):  # then one producer's three, one after another
            await sender.send(TaskDeleted(task_id=TaskId(f"u{n}")))
        await settled(sender)
    assert [len(batch.events) for batch in published.items] == [1, 5, 3]
    assert sent(published) == list(range(9))
    assert all(local.origin == batch.origin == NodeId("a")
               for batch in published.items for local in batch.events)


@pytest.mark.anyio
async def test_a_burst_beyond_the_bound_leaves_in_several_batches_in_order() -> None:
    published: Collected[LocalEventBatch] = Collected()
    async with running(published) as sender:
        for n in range(MAX_PROPOSALS_TOGETHER + 3):
            await sender.send(TaskDeleted(task_id=TaskId(f"t{n}")))
        await settled(sender)
    assert [len(batch.events) for batch in published.items] == [MAX_PROPOSALS_TOGETHER, 3]
    assert sent(published) == list(range(MAX_PROPOSALS_TOGETHER + 3))


@pytest.mark.anyio
async def test_resends_due_together_leave_as_one_batch_without_the_indexed() -> None:
    now = [0.0]
    published: Collected[LocalEventBatch] = Collected()
    async with running(published, now) as sender:
        for n in range(4):
            await sender.send(TaskDeleted(task_id=TaskId(f"t{n}")))
        await settled(sender)
        sender.acknowledge(marked(epoch="e", origin_seq=1))
        published.items.clear()
        now[0] = 1.5
        await sender.resend_due()
        await settled(sender)
    assert [batch.events[0].origin_seq for batch in published.items] == [2]
    assert sent(published) == [2, 3]


@pytest.mark.anyio
async def test_a_status_for_a_task_the_state_no_longer_holds_is_not_resent() -> None:
    now = [0.0]
    published: Collected[LocalEventBatch] = Collected()
    holding = f.state_with(InstanceCreated(instance=f.instance()), TaskCreated(task=f.task()))
    async with running(published, now) as sender:
        await sender.send(TaskStatusUpdated(task_id=TaskId("task-1"), status="complete"))
        await sender.send(RunnerStatusUpdated(runner_id=RunnerId("run-1"),
                                              status=RunnerReady()))
        await settled(sender)
        sender.acknowledge(holding)  # the task is still there: both wait to be indexed
        assert sender.pending == 2
        deleted = f.state_with(TaskDeleted(task_id=TaskId("task-1")), start=holding)
        sender.acknowledge(deleted)  # gone: the master will never index its status
        assert sender.pending == 1
        now[0] = 10.0
        await sender.resend_due()
        await settled(sender)
        assert sent(published) == [0, 1, 1]  # only the runner's status again
