from skulk.master.local_event_rules import moot_local_event, refused_local_event
from skulk.shared.types.events import (
    Event,
    InstanceCreated,
    InstanceDeleted,
    LocalEvent,
    RunnerStatusUpdated,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
    WeightsFetchProgress,
)
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId, TaskId
from skulk.shared.types.runners import RunnerReady
from skulk.testing import factories as f

STATE = f.state_with(InstanceCreated(instance=f.instance()), TaskCreated(task=f.task()))


def proposal(origin: str, event: Event) -> LocalEvent:
    return LocalEvent(origin=NodeId(origin), epoch="e", origin_seq=0, event=event)


def test_a_node_speaks_for_its_own_runners_and_tasks_only() -> None:
    runner = RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerReady())
    task = TaskStatusUpdated(task_id=TaskId("task-1"), status="complete")
    assert refused_local_event(STATE, proposal(f.NODE, runner)) is None
    assert refused_local_event(STATE, proposal(f.NODE, task)) is None
    assert refused_local_event(STATE, proposal("node-x", runner)) == "another_nodes_runner"
    assert refused_local_event(STATE, proposal("node-x", task)) == "another_nodes_task"
    fetch = WeightsFetchProgress(runner_id=RunnerId("run-1"), model_id=f.MODEL, done_bytes=1,
                                 total_bytes=2, source="hub org/m")
    assert refused_local_event(STATE, proposal(f.NODE, fetch)) is None
    assert refused_local_event(STATE, proposal("node-x", fetch)) == "another_nodes_runner"
    deleted = InstanceDeleted(instance_id=InstanceId("inst-1"), reason="forged")
    assert refused_local_event(STATE, proposal(f.NODE, deleted)) == "not_a_worker_event"


def test_unknown_runners_and_tasks_pass_and_change_nothing_when_applied() -> None:
    gone = RunnerStatusUpdated(runner_id=RunnerId("run-gone"), status=RunnerReady())
    assert refused_local_event(STATE, proposal("node-x", gone)) is None


def test_a_status_is_moot_once_its_task_is_deleted_and_only_a_status() -> None:
    status = TaskStatusUpdated(task_id=TaskId("task-1"), status="complete")
    runner = RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerReady())
    deleted = f.state_with(TaskDeleted(task_id=TaskId("task-1")), start=STATE)
    assert not moot_local_event(STATE, proposal(f.NODE, status))
    assert moot_local_event(deleted, proposal(f.NODE, status))
    assert not moot_local_event(deleted, proposal(f.NODE, runner))
