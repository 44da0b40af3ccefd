import itertools
from pathlib import Path

from skulk.master.commands import CommandContext, events_for_command
from skulk.master.reconcile import FINISHED_TASK_RETENTION_SECONDS, reconcile
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.commands import (
    CancelTask,
    Command,
    DeleteInstance,
    PlaceInstance,
    TaskFinished,
    TextGeneration,
)
from skulk.shared.types.events import (
    CommandRejected,
    Event,
    InstanceCreated,
    InstanceDeleted,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import (
    CommandId,
    InstanceId,
    ModelId,
    NodeId,
    RunnerId,
    TaskId,
)
from skulk.shared.types.state import State
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing import factories as f

counter = itertools.count()
NODES = {NodeId("node-a"): NodeTelemetry(
    node_id=NodeId("node-a"), stamp=0.0, memory_total_bytes=16 << 30,
    memory_available_bytes=8 << 30, cpu_count=2, backends=["llama_cpp-cpu"], has_worker=True)}


def context(nodes: dict[NodeId, NodeTelemetry] = NODES) -> CommandContext:
    return CommandContext(catalog=ModelCatalog.builtin(Path(".")), nodes=nodes,
                          new_runner_id=lambda: RunnerId(f"run-{next(counter)}"),
                          new_task_id=lambda: TaskId(f"task-{next(counter)}"))


state_with = f.state_with


def handle(state: State, command: Command,
           nodes: dict[NodeId, NodeTelemetry] = NODES) -> list[Event]:
    return events_for_command(state, command, context(nodes))


def generation(command_id: str = "gen-1", model: str = "smollm2-135m") -> TextGeneration:
    return TextGeneration(command_id=CommandId(command_id), owner_node=f.NODE,
                          params=f.params().model_copy(update={"model_id": ModelId(model)}))


def test_place_instance_creates_it_once() -> None:
    command = PlaceInstance(command_id=CommandId("c"), instance_id=InstanceId("i1"),
                            model_id=ModelId("HuggingFaceTB/SmolLM2-135M-Instruct"))
    [event] = handle(State(), command)
    assert isinstance(event, InstanceCreated) and event.instance.model_id == "smollm2-135m"
    assert handle(state_with(event), command) == []


def test_place_unknown_model_or_without_nodes_is_rejected() -> None:
    unknown = PlaceInstance(command_id=CommandId("c"), instance_id=InstanceId("i"),
                            model_id=ModelId("gpt-9"))
    [event] = handle(State(), unknown)
    assert isinstance(event, CommandRejected) and event.error_kind == "model_not_found"
    known = unknown.model_copy(update={"model_id": ModelId("smollm2-135m")})
    [event] = handle(State(), known, nodes={})
    assert isinstance(event, CommandRejected) and event.error_kind == "placement_failed"


def test_text_generation_becomes_a_task_on_the_least_busy_instance() -> None:
    state = state_with(InstanceCreated(instance=f.instance("inst-1", "run-1")),
                       InstanceCreated(instance=f.instance("inst-2", "run-2")),
                       TaskCreated(task=f.task("t0", "inst-1", "old")))
    [event] = handle(state, generation())
    assert isinstance(event, TaskCreated)
    assert event.task.instance_id == "inst-2" and event.task.command_id == "gen-1"


def test_a_failing_over_generation_never_lands_on_an_excluded_instance() -> None:
    state = state_with(InstanceCreated(instance=f.instance("inst-1", "run-1")),
                       InstanceCreated(instance=f.instance("inst-2", "run-2")),
                       TaskCreated(task=f.task("t0", "inst-2", "old")))
    again = generation().model_copy(update={"excluded_instances": [InstanceId("inst-1")]})
    [event] = handle(state, again)  # inst-1 is the least busy, but it failed this request
    assert isinstance(event, TaskCreated) and event.task.instance_id == "inst-2"
    both = again.model_copy(update={"excluded_instances": [InstanceId("inst-1"),
                                                           InstanceId("inst-2")]})
    [event] = handle(state, both)
    assert isinstance(event, CommandRejected) and "other than the ones that failed" in \
        event.message


def test_text_generation_without_instance_is_rejected_with_a_remedy() -> None:
    [event] = handle(State(), generation())
    assert isinstance(event, CommandRejected) and "place_instance" in event.message


def test_cancel_marks_the_task_and_finish_deletes_it() -> None:
    state = state_with(InstanceCreated(instance=f.instance()), TaskCreated(task=f.task()))
    cancel = CancelTask(command_id=CommandId("x"), target_command_id=CommandId("cmd-1"))
    assert handle(state, cancel) == [TaskStatusUpdated(task_id=TaskId("task-1"),
                                                       status="cancelled")]
    finished = TaskFinished(command_id=CommandId("y"), target_command_id=CommandId("cmd-1"))
    assert handle(state, finished) == [TaskDeleted(task_id=TaskId("task-1"))]
    assert handle(State(), cancel) == [] and handle(State(), finished) == []


def test_delete_instance_fails_its_tasks_before_it_goes() -> None:
    state = state_with(InstanceCreated(instance=f.instance()), TaskCreated(task=f.task()))
    events = handle(state, DeleteInstance(command_id=CommandId("d"),
                                          instance_id=InstanceId("inst-1")))
    assert isinstance(events[0], TaskStatusUpdated) and events[0].status == "failed"
    assert isinstance(events[1], InstanceDeleted)
    assert events[1].reason == "deleted on request" and events[1].replaced_by is None


def test_a_worker_that_gives_an_instance_up_says_why_in_its_removal() -> None:
    state = state_with(InstanceCreated(instance=f.instance()), TaskCreated(task=f.task()))
    why = "node a gave it up: cannot list Qwen/Q-GGUF on the hub: Name or service not known"
    failed, deleted = handle(state, DeleteInstance(
        command_id=CommandId("d"), instance_id=InstanceId("inst-1"), reason=why))
    assert isinstance(failed, TaskStatusUpdated) and failed.error is not None
    assert why in failed.error
    assert deleted == InstanceDeleted(instance_id=InstanceId("inst-1"), reason=why)


def test_reconcile_fails_orphans_and_forgets_old_finished_tasks() -> None:
    state = state_with(TaskCreated(task=f.task("orphan", "gone", "c1")))
    [event] = reconcile(state, {}, now=0.0)
    assert event == TaskStatusUpdated(task_id=TaskId("orphan"), status="failed",
                                      error="instance gone no longer exists")
    state = state_with(TaskCreated(task=f.task("orphan", "gone", "c1")), event)
    assert reconcile(state, {TaskId("orphan"): 0.0}, now=1.0) == []
    late = FINISHED_TASK_RETENTION_SECONDS + 1
    assert reconcile(state, {TaskId("orphan"): 0.0}, now=late) == [
        TaskDeleted(task_id=TaskId("orphan"))]


def test_finished_tasks_carried_from_an_earlier_master_are_forgotten_too() -> None:
    state = state_with(TaskCreated(task=f.task("carried", "gone", "c1")),
                       TaskStatusUpdated(task_id=TaskId("carried"), status="complete"))
    since: dict[TaskId, float] = {}  # a new master knows nothing of when it finished
    assert reconcile(state, since, now=50.0) == [] and since == {TaskId("carried"): 50.0}
    assert reconcile(state, since, now=50.0 + FINISHED_TASK_RETENTION_SECONDS + 1) == [
        TaskDeleted(task_id=TaskId("carried"))]


def test_a_bounded_generation_goes_to_an_instance_with_room_or_is_refused() -> None:
    from skulk.master.admission import concurrency
    full = [TaskCreated(task=f.task(f"t{n}", "inst-1", f"c{n}")) for n in range(6)]
    state = state_with(InstanceCreated(instance=f.instance("inst-1", "run-1")),
                       InstanceCreated(instance=f.instance("inst-2", "run-2")), *full,
                       *[TaskCreated(task=f.task(f"u{n}", "inst-2", f"d{n}"))
                         for n in range(5)])
    assert concurrency(f.instance()) == 4  # llama.cpp batches 4 requests by default
    # 4 running + 1 queued fill an instance with max_queue=1: inst-2 has 5, inst-1 has 6.
    bounded = generation().model_copy(update={"bounded": True, "max_queue": 2})
    [event] = handle(state, bounded)
    assert isinstance(event, TaskCreated) and event.task.instance_id == "inst-2"
    [refused] = handle(state, bounded.model_copy(update={"max_queue": 1}))
    assert isinstance(refused, CommandRejected) and refused.error_kind == "overloaded"
    assert refused.retry_after_seconds == 1 and "queue full" in refused.message
    # Unbounded (a failing-over request) still goes to the least busy.
    [event] = handle(state, generation())
    assert isinstance(event, TaskCreated) and event.task.instance_id == "inst-2"


def test_revoking_a_node_records_it_and_removes_its_instances() -> None:
    from skulk.shared.types.commands import RevokeNode
    from skulk.shared.types.events import NodeRevoked
    state = state_with(InstanceCreated(instance=f.instance()))
    holder = next(iter(state.instances[InstanceId("inst-1")].shards.values())).node_id
    revoke = RevokeNode(command_id=CommandId("cmd-r"), node_id=holder)
    events = handle(state, revoke)
    assert events[0] == NodeRevoked(node_id=holder)
    assert InstanceDeleted(instance_id=InstanceId("inst-1"),
                           reason=f"node {holder} was revoked") in events
    assert handle(state_with(*events, start=state), revoke) == []


TWO_NODES = {**NODES, NodeId("node-b"): NODES[NodeId("node-a")].model_copy(
    update={"node_id": NodeId("node-b")})}


def test_a_runner_killed_for_a_deadline_cools_its_node_off_and_goes_elsewhere() -> None:
    from skulk.shared.types.commands import ReplaceInstance
    from skulk.shared.types.events import NodeFailureNoted
    [placed] = handle(State(), PlaceInstance(
        command_id=CommandId("p"), instance_id=InstanceId("i1"), model_id=ModelId(
            "smollm2-135m"), excluded_nodes=[NodeId("node-b")]), TWO_NODES)
    assert isinstance(placed, InstanceCreated)
    state = state_with(placed)
    replace = ReplaceInstance(command_id=CommandId("r"), instance_id=InstanceId("i1"),
                              reason="did not report", failed_node=NodeId("node-a"))
    ctx = CommandContext(catalog=ModelCatalog.builtin(Path(".")), nodes=TWO_NODES,
                         new_runner_id=lambda: RunnerId(f"run-{next(counter)}"),
                         new_task_id=lambda: TaskId(f"task-{next(counter)}"), now=1000.0)
    events = events_for_command(state, replace, ctx)
    noted, *_, created = events
    assert noted == NodeFailureNoted(node_id=NodeId("node-a"), reason="did not report",
                                     until=1300.0, failures=1)
    assert isinstance(created, InstanceCreated)
    assert {s.node_id for s in created.instance.shards.values()} == {"node-b"}
    # While node-a cools off, new placements avoid it too; once it is the only node, not.
    cooled = state_with(*events)
    fresh = PlaceInstance(command_id=CommandId("q"), instance_id=InstanceId("i2"),
                          model_id=ModelId("smollm2-135m"))
    [again] = events_for_command(cooled, fresh, ctx)
    assert isinstance(again, InstanceCreated)
    assert {s.node_id for s in again.instance.shards.values()} == {"node-b"}
    alone = CommandContext(catalog=ctx.catalog, nodes=NODES, new_runner_id=ctx.new_runner_id,
                           new_task_id=ctx.new_task_id, now=1000.0)
    [only] = events_for_command(cooled, fresh, alone)
    assert isinstance(only, InstanceCreated)
    # A second failure within the cool-off doubles it and counts two in a row.
    [second, *_] = events_for_command(cooled, replace.model_copy(
        update={"instance_id": created.instance.instance_id}), ctx)
    assert second == NodeFailureNoted(node_id=NodeId("node-a"), reason="did not report",
                                      until=1600.0, failures=2)


def test_a_placement_that_does_not_fit_evicts_the_least_recently_used_idle_instance(
        ) -> None:
    from dataclasses import replace

    from skulk.fitting.memory import shard_need_bytes, shard_share
    catalog = ModelCatalog.builtin(Path("."))
    card = catalog.resolve(ModelId("smollm2-135m"))
    assert card is not None
    old = f.instance("old", "run-old", node=NodeId("node-a"))
    reading = NODES[NodeId("node-a")]
    need = shard_need_bytes(card, "llama_cpp", shard_share(card, "pipeline", old.shards[
        RunnerId("run-old")]), reading)
    # What is free now is a little short of another copy; evicting `old` frees enough.
    tight = {NodeId("node-a"): reading.model_copy(update={
        "memory_available_bytes": need - 1, "memory_total_bytes": 4 * need})}
    state = state_with(InstanceCreated(instance=old))
    place_new = PlaceInstance(command_id=CommandId("p"), instance_id=InstanceId("new"),
                              model_id=ModelId("smollm2-135m"))
    ctx = replace(context(tight), evictable=())
    [refused] = events_for_command(state, place_new, ctx)
    assert isinstance(refused, CommandRejected)
    deleted, created = events_for_command(state, place_new, replace(ctx, evictable=(old,)))
    assert isinstance(deleted, InstanceDeleted) and deleted.instance_id == "old"
    assert "least recently used" in deleted.reason
    assert isinstance(created, InstanceCreated) and created.instance.instance_id == "new"


def test_a_placement_unless_served_places_only_a_model_with_no_instance() -> None:
    """Automatic placement: a request that saw no instance must not place a second copy of
    a model the master placed meanwhile (say, replacing an instance on a lost node)."""
    command = PlaceInstance(command_id=CommandId("auto"), instance_id=InstanceId("i2"),
                            model_id=ModelId("HuggingFaceTB/SmolLM2-135M-Instruct"),
                            unless_served=True)
    [placed] = handle(State(), command)
    assert isinstance(placed, InstanceCreated)
    served = state_with(InstanceCreated(instance=f.instance("inst-1", "run-1")))
    assert handle(served, command) == []
    assert isinstance(handle(served, command.model_copy(update={"unless_served": False}))[0],
                      InstanceCreated)  # an explicit placement still adds a copy
