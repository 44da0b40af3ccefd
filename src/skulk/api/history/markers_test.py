from skulk.api.history.markers import MARKING_KINDS, markers_of
from skulk.shared.types.events import (
    Event,
    IndexedEvent,
    InstanceCreated,
    InstanceDeleted,
    MembershipAgreed,
    NodeFailureNoted,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
    TaskDeleted,
)
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId, SessionId, TaskId
from skulk.shared.types.runners import RunnerFailed, RunnerReady
from skulk.shared.types.state import State
from skulk.testing.factories import instance, state_with


def indexed(event: Event, master: str = "m") -> IndexedEvent:
    return IndexedEvent(index=1, session=SessionId("s"), master_node=NodeId(master), event=event)


def kinds(before: State, event: Event, previous_master: str | None = "m",
          master: str = "m") -> list[tuple[str, str | None, str | None]]:
    return [(m.kind, m.node_id, m.instance_id) for m in markers_of(
        before, NodeId(previous_master) if previous_master else None,
        indexed(event, master), at=12.0)]


def test_placements_evictions_and_failovers_of_instances() -> None:
    placed = instance()
    assert kinds(State(), InstanceCreated(instance=placed)) == [
        ("placement", None, "inst-1")]
    with_it = state_with(InstanceCreated(instance=placed))
    assert kinds(with_it, InstanceDeleted(instance_id=InstanceId("inst-1"), reason="idle")) == [
        ("eviction", None, "inst-1")]
    assert kinds(with_it, InstanceDeleted(
        instance_id=InstanceId("inst-1"), reason="rank 0 killed",
        replaced_by=InstanceId("inst-2"))) == [("failover", None, "inst-1")]


def test_a_runner_failing_marks_its_instance_once() -> None:
    with_it = state_with(InstanceCreated(instance=instance()))
    failed = RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerFailed(error="died"))
    assert kinds(with_it, failed) == [("failover", None, "inst-1")]
    assert kinds(state_with(failed, start=with_it), failed) == []  # a repeated report
    ready = RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerReady())
    assert kinds(with_it, ready) == []


def test_node_failures_joins_and_leaves() -> None:
    noted = NodeFailureNoted(node_id=NodeId("b"), reason="did not report", until=99.0)
    assert kinds(State(), noted) == [("failover", "b", None)]
    two = state_with(MembershipAgreed(members=[NodeId("a"), NodeId("b")]))
    changed = MembershipAgreed(members=[NodeId("a"), NodeId("c")])
    assert kinds(two, changed) == [("join", "c", None), ("leave", "b", None)]
    # The first agreement names every member: nobody joined at that moment.
    assert kinds(State(), MembershipAgreed(members=[NodeId("a")])) == []


def test_a_new_master_is_marked_but_not_a_catch_up() -> None:
    snapshot = StateSnapshotHydrated(state=State())
    assert kinds(State(), snapshot, previous_master="a", master="b") == [
        ("master", "b", None)]
    assert kinds(State(), snapshot, previous_master="b", master="b") == []
    assert kinds(State(), snapshot, previous_master=None, master="b") == []
    assert kinds(State(), TaskDeleted(task_id=TaskId("t"))) == []


def test_every_event_that_makes_a_marker_is_of_a_kind_the_history_subscribes_to() -> None:
    placed = instance()
    with_it = state_with(InstanceCreated(instance=placed))
    two = state_with(MembershipAgreed(members=[NodeId("a"), NodeId("b")]))
    marking: list[tuple[State, Event]] = [
        (State(), InstanceCreated(instance=placed)),
        (with_it, InstanceDeleted(instance_id=InstanceId("inst-1"), reason="idle")),
        (with_it, RunnerStatusUpdated(runner_id=RunnerId("run-1"),
                                      status=RunnerFailed(error="died"))),
        (State(), NodeFailureNoted(node_id=NodeId("b"), reason="silent", until=99.0)),
        (two, MembershipAgreed(members=[NodeId("a"), NodeId("c")])),
        (State(), StateSnapshotHydrated(state=State())),
    ]
    for before, event in marking:
        assert kinds(before, event, previous_master="a", master="b"), event
        assert isinstance(event, MARKING_KINDS), event
    # The events every request makes are not among them: the history is not woken by them.
    assert not isinstance(TaskDeleted(task_id=TaskId("t")), MARKING_KINDS)
