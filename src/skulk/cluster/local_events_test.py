import pytest

from skulk.cluster.local_events import GIVE_UP_SECONDS, LocalEventSender
from skulk.shared.types.event_source import EventSource
from skulk.shared.types.events import LocalEvent, TaskDeleted
from skulk.shared.types.ids import NodeId, TaskId
from skulk.shared.types.state import State
from skulk.testing.channels import Collected


def marked(epoch: str, origin_seq: int) -> State:
    """A State (replayed or adopted from a snapshot) whose newest event from `a` is given."""
    return State(producer_marks={
        NodeId("a"): EventSource(origin=NodeId("a"), epoch=epoch, origin_seq=origin_seq)})


@pytest.mark.anyio
async def test_events_are_resent_with_backoff_until_indexed_then_given_up() -> None:
    now = [0.0]
    published: Collected[LocalEvent] = Collected()
    sent = published.items
    sender = LocalEventSender(node_id=NodeId("a"), epoch="e", published=published,
                              clock=lambda: now[0])
    await sender.send(TaskDeleted(task_id=TaskId("t1")))
    await sender.send(TaskDeleted(task_id=TaskId("t2")))
    assert [s.origin_seq for s in sent] == [0, 1]
    sender.acknowledge(marked(epoch="e", origin_seq=0))
    now[0] = 1.0
    await sender.resend_due()
    assert [s.origin_seq for s in sent] == [0, 1, 1]
    now[0] = 2.0
    await sender.resend_due()  # backed off: the next resend is 2 s later
    assert len(sent) == 3
    now[0] = 3.0
    await sender.resend_due()
    assert len(sent) == 4
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


@pytest.mark.anyio
async def test_the_first_resend_waits_as_long_as_indexing_takes_here() -> None:
    now = [0.0]
    published: Collected[LocalEvent] = Collected()
    sender = LocalEventSender(node_id=NodeId("a"), epoch="e", published=published,
                              clock=lambda: now[0])
    for seq in range(8):  # a busy master: each event indexed 2.5 s after it was sent
        await sender.send(TaskDeleted(task_id=TaskId(f"t{seq}")))
        now[0] += 2.5
        sender.acknowledge(marked(epoch="e", origin_seq=seq))
    assert 2.5 <= sender.indexing_time.first_resend() <= 8.0
    await sender.send(TaskDeleted(task_id=TaskId("late")))
    now[0] += 2.0
    await sender.resend_due()
    assert len(published.items) == 9, "not resent before indexing usually takes"
    now[0] += 6.0
    await sender.resend_due()
    assert len(published.items) == 10, "resent once overdue"
