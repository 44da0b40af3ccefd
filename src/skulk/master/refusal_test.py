"""A worker's refusal of its shard: exactly one re-placement, one node wider, bounded."""

import itertools
from pathlib import Path

from skulk.master.commands import CommandContext, events_for_command
from skulk.master.placement import wider_placement
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.commands import RefusePlacement
from skulk.shared.types.events import Event, InstanceCreated, InstanceDeleted, TaskCreated
from skulk.shared.types.ids import CommandId, InstanceId, NodeId, TaskId
from skulk.shared.types.instances import Instance
from skulk.shared.types.state import State
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing import factories as f
from skulk.testing.placement import GIB, RunnerIds, command, node, nodes, smollm2

THREE = nodes(node("a", 8 * GIB), node("b", 4 * GIB), node("c", 2 * GIB))


def context(cluster: dict[NodeId, NodeTelemetry] = THREE) -> CommandContext:
    ids = itertools.count()
    return CommandContext(catalog=ModelCatalog([smollm2()], Path(".")), nodes=cluster,
                          new_runner_id=RunnerIds(), new_task_id=lambda: TaskId("t"),
                          new_instance_id=lambda: InstanceId(f"wide-{next(ids)}"))


def placed_state(cluster: dict[NodeId, NodeTelemetry] = THREE, **fields: object
                 ) -> tuple[State, Instance]:
    [created] = events_for_command(State(), command(**fields), context(cluster))
    assert isinstance(created, InstanceCreated)
    return f.state_with(created), created.instance


def refuse(instance: Instance, node_id: str = "a", command_id: str = "r1") -> RefusePlacement:
    return RefusePlacement(command_id=CommandId(command_id), instance_id=instance.instance_id,
                           node_id=NodeId(node_id), reason="live memory 0.4 GiB < 0.8 GiB")


def test_a_refusal_replaces_the_instance_one_node_wider() -> None:
    state, first = placed_state()
    assert len(first.shards) == 1 and first.engine == "llama_cpp"
    events = events_for_command(state, refuse(first), context())
    deleted, created = events
    assert isinstance(deleted, InstanceDeleted) and deleted.instance_id == first.instance_id
    assert "node a refused its shard" in deleted.reason
    assert isinstance(created, InstanceCreated)
    assert deleted.replaced_by == created.instance.instance_id  # `skulk place` follows it
    wider = created.instance
    assert len(wider.shards) == 2 and wider.engine == "llama_cpp" and wider.ring_port is not None
    assert {s.node_id for s in wider.shards.values()} == {"a", "b"}  # the refuser stays in


def test_a_second_refusal_of_the_same_instance_does_nothing() -> None:
    state, first = placed_state()
    events = events_for_command(state, refuse(first), context())
    after = f.state_with(*events, start=state)
    assert events_for_command(after, refuse(first, "a", "r2"), context()) == []
    assert len(after.instances) == 1


def test_refusals_widen_until_the_cluster_is_used_up_then_remove() -> None:
    state, instance = placed_state()
    widths = [len(instance.shards)]
    for step in range(5):
        events = events_for_command(state, refuse(instance, command_id=f"r{step}"), context())
        state = f.state_with(*events, start=state)
        created = [e for e in events if isinstance(e, InstanceCreated)]
        if not created:
            [deleted] = [e for e in events if isinstance(e, InstanceDeleted)]
            assert "no wider placement" in deleted.reason and "3 of the cluster's 3" in (
                deleted.reason)
            break
        instance = created[0].instance
        widths.append(len(instance.shards))
    assert widths == [1, 2, 3] and state.instances == {}


def test_when_no_wider_placement_fits_the_instance_is_removed_and_its_tasks_fail() -> None:
    cluster = nodes(node("a", 8 * GIB), node("b", 200 * 1024**2))
    state, first = placed_state(cluster)
    state = f.state_with(TaskCreated(task=f.task("t1", first.instance_id)), start=state)
    events: list[Event] = events_for_command(state, refuse(first), context(cluster))
    assert [type(e).__name__ for e in events] == ["TaskStatusUpdated", "InstanceDeleted"]
    deleted = events[-1]
    assert isinstance(deleted, InstanceDeleted) and "b: llama_cpp layers" in deleted.reason


def test_the_wider_command_keeps_the_sharding_and_excludes_nothing() -> None:
    _, first = placed_state(min_nodes=2)
    wider = wider_placement(first, refuse(first), 3, InstanceId("new"))
    assert not isinstance(wider, str)
    assert (wider.min_nodes, wider.excluded_nodes, wider.engine) == (3, [], None)
    assert wider.sharding == first.sharding and wider.instance_id == "new"
    assert isinstance(wider_placement(first, refuse(first), 2, InstanceId("new")), str)


def test_a_failed_rank_places_its_instance_again_at_the_same_width_once() -> None:
    from skulk.shared.types.commands import ReplaceInstance

    state, instance = placed_state(min_nodes=2, engine="mlx")
    ask = ReplaceInstance(command_id=CommandId("x1"), instance_id=instance.instance_id,
                          reason="rank 1 on b ended")
    events = events_for_command(state, ask, context())
    deleted = [e for e in events if isinstance(e, InstanceDeleted)]
    [created] = [e for e in events if isinstance(e, InstanceCreated)]
    assert [e.instance_id for e in deleted] == [instance.instance_id]
    assert len(created.instance.shards) == 2 and created.instance.engine == "mlx"
    assert created.instance.ring_port != instance.ring_port  # a fresh ring
    # the other rank's worker asks too: the instance is gone, nothing more happens
    after = f.state_with(*events, start=state)
    assert events_for_command(after, ask.model_copy(update={"command_id": "x2"}),
                              context()) == []


def test_an_instance_whose_ranks_keep_ending_is_given_up_after_a_few_placements() -> None:
    from skulk.master.commands import MAX_REPLACEMENTS
    from skulk.shared.types.commands import ReplaceInstance

    state, instance = placed_state(min_nodes=2, engine="mlx")
    for attempt in range(MAX_REPLACEMENTS):
        ask = ReplaceInstance(command_id=CommandId(f"x{attempt}"),
                              instance_id=instance.instance_id, reason="rank 1 ended")
        events = events_for_command(state, ask, context())
        [created] = [e for e in events if isinstance(e, InstanceCreated)]
        assert created.instance.replaced == attempt + 1
        state, instance = f.state_with(*events, start=state), created.instance
    last = ReplaceInstance(command_id=CommandId("last"), instance_id=instance.instance_id,
                           reason="rank 1 ended")
    events = events_for_command(state, last, context())
    assert not [e for e in events if isinstance(e, InstanceCreated)]
    [deleted] = [e for e in events if isinstance(e, InstanceDeleted)]
    assert "placed again 3 times" in deleted.reason and "place it by hand" in deleted.reason
