from skulk.shared.types.events import TaskCreated, TaskDeleted, TaskStatusUpdated
from skulk.shared.types.ids import CommandId, TaskId
from skulk.shared.types.state import State
from skulk.testing import factories as f


def test_task_for_command_follows_tasks_created_updated_and_deleted() -> None:
    empty = State()
    assert empty.task_for_command(CommandId("cmd-1")) is None
    one = f.state_with(TaskCreated(task=f.task("t1", command_id="cmd-1")), start=empty)
    assert empty.task_for_command(CommandId("cmd-1")) is None  # the older State unchanged
    found = one.task_for_command(CommandId("cmd-1"))
    assert found is not None and found.task_id == TaskId("t1")

    two = f.state_with(TaskCreated(task=f.task("t2", command_id="cmd-2")),
                       TaskStatusUpdated(task_id=TaskId("t1"), status="running"), start=one)
    updated = two.task_for_command(CommandId("cmd-1"))
    assert updated is not None and updated.status == "running"
    second = two.task_for_command(CommandId("cmd-2"))
    assert second is not None and second.task_id == TaskId("t2")
    stale = one.task_for_command(CommandId("cmd-1"))  # asked again after a newer State
    assert stale is not None and stale.status != "running"
    assert one.task_for_command(CommandId("cmd-2")) is None

    gone = f.state_with(TaskDeleted(task_id=TaskId("t1")), start=two)
    assert gone.task_for_command(CommandId("cmd-1")) is None
    assert gone.task_for_command(CommandId("cmd-2")) is not None


def test_the_index_is_no_part_of_the_state_value_or_its_wire_form() -> None:
    state = f.state_with(TaskCreated(task=f.task("t1", command_id="cmd-1")))
    fresh = State.model_validate_json(state.model_dump_json())
    assert state.task_for_command(CommandId("cmd-1")) is not None  # index built on one
    assert fresh == state and state == fresh
    assert fresh.model_dump() == state.model_dump()
    assert "tasks_by_command" not in state.model_dump_json()
