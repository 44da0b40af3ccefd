from skulk.master.local_event_order import LocalEventOrder
from skulk.shared.types.event_source import EventSource
from skulk.shared.types.events import LocalEvent, TaskDeleted
from skulk.shared.types.ids import NodeId, TaskId

NODE = NodeId("node-a")


def local(seq: int, epoch: str = "e1") -> LocalEvent:
    return LocalEvent(origin=NODE, epoch=epoch, origin_seq=seq,
                      event=TaskDeleted(task_id=TaskId(f"task-{seq}")))


def seqs(events: list[LocalEvent]) -> list[int]:
    return [e.origin_seq for e in events]


def test_in_order_events_pass_and_resends_are_dropped() -> None:
    order = LocalEventOrder(lambda: {})
    assert seqs(order.arrive(local(0), 0.0)) == [0]
    assert seqs(order.arrive(local(1), 0.0)) == [1]
    assert order.arrive(local(0), 0.0) == []
    assert order.arrive(local(1), 0.0) == []


def test_an_early_event_waits_for_the_gap_then_both_go_in_order() -> None:
    order = LocalEventOrder(lambda: {})
    assert order.arrive(local(1), 0.0) == []
    assert order.arrive(local(2), 0.0) == []
    assert seqs(order.arrive(local(0), 0.5)) == [0, 1, 2]
    assert order.overdue(100.0) == []


def test_a_gap_that_never_fills_is_skipped_after_the_hold() -> None:
    order = LocalEventOrder(lambda: {}, hold_seconds=3.0)
    order.arrive(local(0), 0.0)
    assert order.arrive(local(2), 1.0) == []
    assert order.overdue(3.9) == []
    assert seqs(order.overdue(4.0)) == [2]
    assert order.arrive(local(1), 5.0) == [], "what was skipped stays skipped"
    assert seqs(order.arrive(local(3), 5.0)) == [3]


def test_a_new_master_starts_after_the_carried_mark_of_the_same_epoch() -> None:
    marks = {NODE: EventSource(origin=NODE, epoch="e1", origin_seq=4)}
    order = LocalEventOrder(lambda: marks)
    assert order.arrive(local(4), 0.0) == [], "already indexed by the old master"
    assert seqs(order.arrive(local(5), 0.0)) == [5]
    assert seqs(order.arrive(local(0, epoch="e2"), 0.0)) == [0], "a restart counts anew"
