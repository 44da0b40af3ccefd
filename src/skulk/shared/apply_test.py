import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skulk.shared.apply import EventOutOfOrder, apply
from skulk.shared.types.event_source import EventSource
from skulk.shared.types.events import (
    CommandRejected,
    Event,
    IndexedEvent,
    InstanceCreated,
    InstanceDeleted,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
    WeightsFetchProgress,
    WeightsReady,
)
from skulk.shared.types.ids import CommandId, InstanceId, NodeId, RunnerId, SessionId, TaskId
from skulk.shared.types.runners import RunnerFetching, RunnerLoading, RunnerReady
from skulk.shared.types.state import State
from skulk.testing import factories as f

SESSION = SessionId("sess-test")


def run(events: list[Event], state: State | None = None) -> State:
    return f.state_with(*events, start=state)


def test_instance_created_adds_the_instance() -> None:
    state = run([InstanceCreated(instance=f.instance())])
    assert list(state.instances) == ["inst-1"]
    assert state.last_event_applied_idx == 0


def test_instance_deleted_removes_it_and_its_runners() -> None:
    state = run([
        InstanceCreated(instance=f.instance()),
        RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerReady()),
        InstanceDeleted(instance_id=InstanceId("inst-1"), reason="gone"),
    ])
    assert state.instances == {} and state.runners == {}


def test_deleting_an_unknown_instance_changes_nothing_but_the_index() -> None:
    state = run([InstanceDeleted(instance_id=InstanceId("nope"), reason="x")])
    assert state == State(last_event_applied_idx=0)


def test_runner_status_is_recorded_for_owned_runners_only() -> None:
    state = run([
        InstanceCreated(instance=f.instance()),
        RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerLoading()),
        RunnerStatusUpdated(runner_id=RunnerId("stray"), status=RunnerReady()),
    ])
    assert state.runners == {"run-1": RunnerLoading()}


def test_a_fetch_shows_as_the_ranks_runner_status_until_the_runner_reports() -> None:
    progress = WeightsFetchProgress(runner_id=RunnerId("run-1"), model_id=f.MODEL,
                                    done_bytes=40, total_bytes=100, source="peer node-b")
    state = run([InstanceCreated(instance=f.instance()), progress])
    assert state.runners == {"run-1": RunnerFetching(done_bytes=40, total_bytes=100,
                                                     source="peer node-b")}
    ready = WeightsReady(runner_id=RunnerId("run-1"), model_id=f.MODEL, total_bytes=100,
                         files_sha256="a" * 64, source="peer node-b")
    state = run([ready], state)
    assert state.runners == {"run-1": RunnerFetching(done_bytes=100, total_bytes=100,
                                                     source="peer node-b")}
    state = run([RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerLoading())],
                state)
    assert state.runners == {"run-1": RunnerLoading()}
    stray = progress.model_copy(update={"runner_id": RunnerId("stray")})
    assert run([stray], state).runners == state.runners


def test_task_created_then_status_then_deleted() -> None:
    state = run([TaskCreated(task=f.task())])
    assert state.tasks[TaskId("task-1")].status == "pending"
    state = run([TaskStatusUpdated(task_id=TaskId("task-1"), status="running")], state)
    assert state.tasks[TaskId("task-1")].status == "running"
    state = run([TaskDeleted(task_id=TaskId("task-1"))], state)
    assert state.tasks == {}


def test_terminal_task_status_is_final() -> None:
    state = run([
        TaskCreated(task=f.task()),
        TaskStatusUpdated(task_id=TaskId("task-1"), status="failed", error="died"),
        TaskStatusUpdated(task_id=TaskId("task-1"), status="running"),
    ])
    assert state.tasks[TaskId("task-1")].status == "failed"
    assert state.tasks[TaskId("task-1")].error == "died"


def test_status_of_unknown_task_is_ignored() -> None:
    state = run([TaskStatusUpdated(task_id=TaskId("ghost"), status="running")])
    assert state.tasks == {}


def test_command_rejected_changes_nothing_replicated() -> None:
    before = run([InstanceCreated(instance=f.instance())])
    after = run([CommandRejected(command_id=CommandId("c"), error_kind="internal",
                                 message="m")], before)
    assert after.model_copy(update={"last_event_applied_idx": 0}) == before


def test_snapshot_replaces_state_at_any_index() -> None:
    before = run([TaskCreated(task=f.task())])
    snapshot = State(instances={InstanceId("inst-1"): f.instance()})
    after = apply(before, IndexedEvent(master_node=NodeId("m"), index=41, session=SESSION,
                                       event=StateSnapshotHydrated(state=snapshot)))
    assert after.instances == snapshot.instances and after.tasks == {}
    assert after.last_event_applied_idx == 41


def test_a_local_event_moves_its_producers_mark() -> None:
    def from_a(index: int, seq: int) -> IndexedEvent:
        return IndexedEvent(master_node=NodeId("m"), index=index, session=SESSION,
                            event=TaskDeleted(task_id=TaskId("t")),
                            source=EventSource(origin=NodeId("a"), epoch="e", origin_seq=seq))
    state = apply(apply(State(), from_a(0, 3)), from_a(1, 4))
    assert state.producer_marks == {
        NodeId("a"): EventSource(origin=NodeId("a"), epoch="e", origin_seq=4)}


def test_out_of_order_index_is_refused() -> None:
    with pytest.raises(EventOutOfOrder):
        apply(State(), IndexedEvent(master_node=NodeId("m"), index=1, session=SESSION,
                                    event=TaskDeleted(task_id=TaskId("t"))))


def test_every_event_type_applies() -> None:
    kinds = {type(e).__name__ for e in f.one_of_each_event()}
    assert kinds == {t.__name__ for t in Event.__args__[0].__args__}
    run(f.one_of_each_event())


event_lists = st.lists(st.sampled_from(f.one_of_each_event()), max_size=30)


@settings(max_examples=60, deadline=None)
@given(event_lists)
def test_replaying_a_log_twice_gives_equal_states(events: list[Event]) -> None:
    assert run(events) == run(events)


@settings(max_examples=40, deadline=None)
@given(event_lists)
def test_apply_never_mutates_its_input(events: list[Event]) -> None:
    state = run(events)
    frozen = state.model_dump()
    run([TaskCreated(task=f.task("t-new"))], state)
    assert state.model_dump() == frozen


def test_a_revoked_node_is_recorded_once() -> None:
    from skulk.shared.types.events import NodeRevoked
    state = run([NodeRevoked(node_id=NodeId("node-x")), NodeRevoked(node_id=NodeId("node-x"))])
    assert state.revoked_nodes == ["node-x"]
    assert state.last_event_applied_idx == 1


def test_a_noted_failure_cools_the_node_off_until_its_end() -> None:
    from skulk.shared.types.events import NodeFailureNoted
    state = run([NodeFailureNoted(node_id=NodeId("node-x"), reason="hung", until=100.0),
                 NodeFailureNoted(node_id=NodeId("node-x"), reason="died", until=400.0,
                                  failures=2)])
    cool_off = state.node_cool_offs[NodeId("node-x")]
    assert (cool_off.reason, cool_off.until, cool_off.failures) == ("died", 400.0, 2)
    assert state.cooling_nodes(399.0) == {"node-x"} and state.cooling_nodes(400.0) == set()
