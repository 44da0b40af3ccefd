from skulk.master.reconcile import FINISHED_TASK_RETENTION_SECONDS, note_finished, reconcile
from skulk.shared.types.events import (
    InstanceCreated,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import TaskId
from skulk.testing import factories as f

TASK = TaskId("task-1")
HELD = f.state_with(InstanceCreated(instance=f.instance()), TaskCreated(task=f.task()))


def test_a_finished_task_is_timed_from_its_end_and_forgotten_after_the_retention() -> None:
    since: dict[TaskId, float] = {}
    complete = TaskStatusUpdated(task_id=TASK, status="complete")
    finished = f.state_with(complete, start=HELD)
    note_finished(since, TaskStatusUpdated(task_id=TASK, status="running"), HELD, now=1.0)
    assert since == {}
    note_finished(since, complete, finished, now=2.0)
    note_finished(since, complete, finished, now=3.0)  # a resend keeps the first end
    assert since == {TASK: 2.0}
    assert reconcile(finished, since, now=2.0 + FINISHED_TASK_RETENTION_SECONDS) == []
    assert reconcile(finished, since, now=3.0 + FINISHED_TASK_RETENTION_SECONDS) == [
        TaskDeleted(task_id=TASK)]
    note_finished(since, TaskDeleted(task_id=TASK), f.state_with(
        TaskDeleted(task_id=TASK), start=finished), now=4.0)
    assert since == {}


def test_a_status_after_the_task_was_deleted_is_not_remembered() -> None:
    """Nothing would ever remove it: `TaskDeleted`, which prunes, came first."""
    since: dict[TaskId, float] = {}
    deleted = f.state_with(TaskDeleted(task_id=TASK), start=HELD)
    note_finished(since, TaskStatusUpdated(task_id=TASK, status="complete"), deleted, now=1.0)
    assert since == {}
