"""What the master does with each command: a pure map from (State, command) to events."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import assert_never

from skulk.master.admission import has_room, retry_after_seconds
from skulk.master.eviction import freed, on_nodes_of
from skulk.master.model_card_commands import add_model_card_events, remove_model_card_events
from skulk.master.placement import (
    DEFAULT_RING_PORTS,
    ClusterView,
    PlacementError,
    place,
    wider_placement,
)
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.commands import (
    AddModelCard,
    CancelTask,
    Command,
    DeleteInstance,
    ForgetMember,
    PlaceInstance,
    RefusePlacement,
    RemoveModelCard,
    ReplaceInstance,
    RevokeNode,
    TaskFinished,
    TextGeneration,
)
from skulk.shared.types.events import (
    CommandRejected,
    Event,
    InstanceCreated,
    InstanceDeleted,
    MembershipAgreed,
    NodeFailureNoted,
    NodeRevoked,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId, TaskId, new_instance_id
from skulk.shared.types.instances import Instance
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.runners import is_serving
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES, TextGenerationTask
from skulk.shared.types.telemetry import NodeTelemetry

# A split instance whose ranks keep ending is placed again this many times, then given up:
# a model that crashes wherever it goes must not cycle through the cluster forever.
MAX_REPLACEMENTS = 3
# A node whose runner missed a deadline is avoided this long (times its failures in a row).
COOL_OFF_SECONDS = 300.0

@dataclass(frozen=True)
class CommandContext:
    """What command handling reads besides State: cards, live nodes, fresh ids."""

    catalog: ModelCatalog
    nodes: Mapping[NodeId, NodeTelemetry]
    new_runner_id: Callable[[], RunnerId]
    new_task_id: Callable[[], TaskId]
    # Live members, readings or not (None: exactly the nodes with readings). A member
    # without readings turns a failed placement into "pending" rather than "impossible".
    live_nodes: frozenset[NodeId] | None = None
    new_instance_id: Callable[[], InstanceId] = new_instance_id
    ring_ports: range = DEFAULT_RING_PORTS
    # Wall clock, Unix seconds, for the nodes' cool-offs (None: none is considered).
    now: float | None = None
    # Idle, unpinned instances, least recently used first: evicted in that order when a
    # placement does not fit otherwise.
    evictable: tuple[Instance, ...] = ()

    def cluster(self, state: State) -> ClusterView:
        """The cluster as placement sees it, with the instances placed in `state`."""
        return ClusterView(nodes=self.nodes, live_nodes=self.live_nodes,
                           instances=state.instances, ring_ports=self.ring_ports)

    def cooling_nodes(self, state: State) -> frozenset[NodeId]:
        return frozenset() if self.now is None else state.cooling_nodes(self.now)

    def cluster_size(self) -> int:
        """Nodes that could hold a shard: live, reporting, running a worker."""
        return sum(1 for n in self.nodes.values() if n.has_worker)


def events_for_command(state: State, command: Command, context: CommandContext) -> list[Event]:
    match command:
        case PlaceInstance():
            return _place_instance(state, command, context)
        case DeleteInstance():
            return delete_instance_events(state, command.instance_id, command.reason)
        case RefusePlacement():
            return _refuse_placement(state, command, context)
        case ReplaceInstance():
            return _replace_instance(state, command, context)
        case TextGeneration():
            return _text_generation(state, command, context)
        case CancelTask():
            task = state.task_for_command(command.target_command_id)
            if task is None or task.status in TERMINAL_TASK_STATUSES:
                return []
            return [TaskStatusUpdated(task_id=task.task_id, status="cancelled")]
        case TaskFinished():
            task = state.task_for_command(command.target_command_id)
            return [] if task is None else [TaskDeleted(task_id=task.task_id)]
        case RevokeNode():
            return _revoke_node(state, command)
        case ForgetMember():
            if command.node_id not in state.members:
                return []
            return [MembershipAgreed(members=[n for n in state.members
                                              if n != command.node_id])]
        case AddModelCard():
            return add_model_card_events(state, command, context.catalog)
        case RemoveModelCard():
            return remove_model_card_events(state, command)
        case _:
            assert_never(command)


def _revoke_node(state: State, command: RevokeNode) -> list[Event]:
    if command.node_id in state.revoked_nodes:
        return []
    reason = f"node {command.node_id} was revoked"
    return [NodeRevoked(node_id=command.node_id), *[
        event for instance in state.instances.values()
        if any(shard.node_id == command.node_id for shard in instance.shards.values())
        for event in delete_instance_events(state, instance.instance_id, reason)]]


def delete_instance_events(state: State, instance_id: InstanceId, reason: str,
                           replaced_by: InstanceId | None = None) -> list[Event]:
    """Fail the instance's live tasks first, so no request waits on a vanished instance."""
    if instance_id not in state.instances:
        return []
    failures: list[Event] = [
        TaskStatusUpdated(task_id=t.task_id, status="failed",
                          error=f"instance {instance_id} was removed: {reason}")
        for t in state.tasks.values()
        if t.instance_id == instance_id and t.status not in TERMINAL_TASK_STATUSES
    ]
    return [*failures, InstanceDeleted(instance_id=instance_id, reason=reason,
                                       replaced_by=replaced_by)]


def _place_instance(state: State, command: PlaceInstance, context: CommandContext) -> list[Event]:
    if command.instance_id in state.instances:
        return []
    card = context.catalog.resolve(command.model_id)
    if card is None:
        return [CommandRejected(command_id=command.command_id, error_kind="model_not_found",
                                message=f"unknown model {command.model_id!r}")]
    if command.unless_served and state.instances_of(card.model_id):
        return []  # placed meanwhile (the sender waits for any instance of the model)
    result = place_avoiding(command, card, state, context)
    evicted: list[Instance] = []
    if isinstance(result, PlacementError):
        made_room = _place_evicting(command, card, state, context)
        if made_room is None:
            return [CommandRejected(command_id=command.command_id,
                                    error_kind="placement_failed", message=result.describe())]
        result, evicted = made_room
    reason = (f"evicted, least recently used, to make room for {command.model_id} "
              f"({command.instance_id})")
    return [*[e for gone in evicted
              for e in delete_instance_events(state, gone.instance_id, reason)],
            InstanceCreated(instance=result.model_copy(update={"pinned": command.pinned}))]


def _place_evicting(command: PlaceInstance, card: ModelCard, state: State,
                    context: CommandContext) -> tuple[Instance, list[Instance]] | None:
    """The placement once the fewest least recently used idle instances are gone, and
    those of them on the nodes it uses; None when even all of them free too little."""
    for count in range(1, len(context.evictable) + 1):
        gone = context.evictable[:count]
        ids = {g.instance_id for g in gone}
        without = state.model_copy(update={"instances": {
            i: instance for i, instance in state.instances.items() if i not in ids}})
        roomier = replace(context, nodes=freed(context.nodes, gone, context.catalog),
                          evictable=())
        placed = place_avoiding(command, card, without, roomier)
        if isinstance(placed, Instance):
            return placed, on_nodes_of(placed, gone)
    return None


def _refuse_placement(state: State, refusal: RefusePlacement,
                      context: CommandContext) -> list[Event]:
    """Remove the refused instance and place it once more, one node wider, if it can be."""
    instance = state.instances.get(refusal.instance_id)
    if instance is None:
        return []  # already handled: another rank's refusal got here first
    reason = f"node {refusal.node_id} refused its shard: {refusal.reason}"
    wider = wider_placement(instance, refusal, context.cluster_size(),
                            context.new_instance_id())
    card = context.catalog.resolve(instance.model_id)
    if isinstance(wider, str):
        return delete_instance_events(state, instance.instance_id,
                                      f"{reason}; no wider placement: {wider}")
    if card is None:
        return delete_instance_events(state, instance.instance_id,
                                      f"{reason}; its model card is gone")
    # The refused instance still counts as placed here, so its ring ports are not reused.
    placed = place(wider, card, context.cluster(state), context.new_runner_id)
    if isinstance(placed, PlacementError):
        return delete_instance_events(state, instance.instance_id,
                                      f"{reason}; no wider placement: {placed.describe()}")
    return [*delete_instance_events(state, instance.instance_id,
                                    f"{reason}; placed again over {len(placed.shards)} nodes "
                                    f"as {placed.instance_id}", placed.instance_id),
            InstanceCreated(instance=placed)]


def _replace_instance(state: State, command: ReplaceInstance,
                      context: CommandContext) -> list[Event]:
    """Remove a failed split instance and place it again at its width; every rank's worker
    asks, the first request does it and the others find the instance gone."""
    instance = state.instances.get(command.instance_id)
    if instance is None:
        return []
    if instance.replaced >= MAX_REPLACEMENTS:
        return delete_instance_events(
            state, instance.instance_id,
            f"{command.reason}; not placed again: it was placed again {instance.replaced} "
            "times already and a rank ended each time (look at the nodes' runner logs and "
            "GET /v1/diagnostics/cluster, then place it by hand)")
    noted = _note_failure(state, command, context)
    card = context.catalog.resolve(instance.model_id)
    again = PlaceInstance(command_id=command.command_id, instance_id=context.new_instance_id(),
                          model_id=instance.model_id, engine=instance.engine,
                          sharding=instance.sharding, min_nodes=len(instance.shards))
    # The failed instance still counts as placed here, so its ring ports are not reused.
    failed = frozenset() if command.failed_node is None else frozenset({command.failed_node})
    placed = None if card is None else place_avoiding(again, card, state, context, failed)
    first = [] if noted is None else [noted]
    if not isinstance(placed, Instance):
        why = "its model card is gone" if placed is None else placed.describe()
        return [*first, *delete_instance_events(state, instance.instance_id,
                                                f"{command.reason}; not placed again: {why}")]
    placed = placed.model_copy(update={"replaced": instance.replaced + 1})
    return [*first,
            *delete_instance_events(state, instance.instance_id,
                                    f"{command.reason}; placed again as {placed.instance_id}",
                                    placed.instance_id),
            InstanceCreated(instance=placed)]


def _note_failure(state: State, command: ReplaceInstance,
                  context: CommandContext) -> NodeFailureNoted | None:
    """The failed node's cool-off: longer for each failure in a row, counted again from
    one once the last cool-off ended."""
    if command.failed_node is None or context.now is None:
        return None
    before = state.node_cool_offs.get(command.failed_node)
    failures = 1 if before is None or before.until <= context.now else before.failures + 1
    return NodeFailureNoted(node_id=command.failed_node, reason=command.reason,
                            until=context.now + COOL_OFF_SECONDS * failures,
                            failures=failures)


def place_avoiding(command: PlaceInstance, card: ModelCard, state: State,
                   context: CommandContext,
                   failed: frozenset[NodeId] = frozenset()) -> Instance | PlacementError:
    """Place away from the nodes cooling off (and `failed`, which just failed) while
    anything else fits; on them otherwise (a small cluster still serves)."""
    cooling = (context.cooling_nodes(state) | failed) - set(command.excluded_nodes)
    cluster = context.cluster(state)
    if cooling:
        avoiding = command.model_copy(update={
            "excluded_nodes": [*command.excluded_nodes, *sorted(cooling)]})
        placed = place(avoiding, card, cluster, context.new_runner_id)
        if isinstance(placed, Instance):
            return placed
    return place(command, card, cluster, context.new_runner_id)


def _load(state: State, instance: Instance) -> tuple[bool, int]:
    """Sort key: serving instances first, then the fewest unfinished tasks."""
    serving = all(is_serving(state.runners.get(r)) for r in instance.shards)
    busy = sum(1 for t in state.tasks.values()
               if t.instance_id == instance.instance_id
               and t.status not in TERMINAL_TASK_STATUSES)
    return (not serving, busy)


def _text_generation(state: State, command: TextGeneration, context: CommandContext) -> list[Event]:
    if state.task_for_command(command.command_id) is not None:
        return []  # a resend of a command a previous master already turned into a task
    excluded = set(command.excluded_instances)
    candidates = [i for i in state.instances_of(command.params.model_id)
                  if i.instance_id not in excluded]
    if not candidates:
        other = " other than the ones that failed this request" if excluded else ""
        return [CommandRejected(
            command_id=command.command_id, error_kind="model_not_found",
            message=f"no instance of {command.params.model_id}{other} is placed; "
                    "place one with POST /place_instance")]
    if command.bounded:
        with_room = [i for i in candidates
                     if has_room(state, i, command.max_queue, context.nodes)]
        if not with_room:
            wait = retry_after_seconds(state, candidates, context.nodes)
            return [CommandRejected(
                command_id=command.command_id, error_kind="overloaded",
                retry_after_seconds=wait,
                message=f"every instance of {command.params.model_id} has its queue full; "
                        f"retry in {wait} s, or place another instance")]
        candidates = with_room
    instance = min(candidates, key=lambda i: (_load(state, i), i.instance_id))
    task = TextGenerationTask(task_id=context.new_task_id(), command_id=command.command_id,
                              instance_id=instance.instance_id,
                              owner_node=command.owner_node, params=command.params)
    return [TaskCreated(task=task)]
