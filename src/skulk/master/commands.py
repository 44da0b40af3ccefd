"""What the master does with each command: a pure map from (State, command) to events."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import assert_never

from skulk.master.placement import PlacementError, place
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
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId, TaskId
from skulk.shared.types.instances import Instance
from skulk.shared.types.runners import is_serving
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES, TextGenerationTask
from skulk.shared.types.telemetry import NodeTelemetry


@dataclass(frozen=True)
class CommandContext:
    """What command handling reads besides State: cards, live nodes, fresh ids."""

    catalog: ModelCatalog
    nodes: Mapping[NodeId, NodeTelemetry]
    new_runner_id: Callable[[], RunnerId]
    new_task_id: Callable[[], TaskId]


def events_for_command(state: State, command: Command, context: CommandContext) -> list[Event]:
    match command:
        case PlaceInstance():
            return _place_instance(state, command, context)
        case DeleteInstance():
            return delete_instance_events(state, command.instance_id, "deleted on request")
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
        case _:
            assert_never(command)


def delete_instance_events(state: State, instance_id: InstanceId, reason: str) -> list[Event]:
    """Fail the instance's live tasks first, so no request waits on a vanished instance."""
    if instance_id not in state.instances:
        return []
    failures: list[Event] = [
        TaskStatusUpdated(task_id=t.task_id, status="failed",
                          error=f"instance {instance_id} was removed: {reason}")
        for t in state.tasks.values()
        if t.instance_id == instance_id and t.status not in TERMINAL_TASK_STATUSES
    ]
    return [*failures, InstanceDeleted(instance_id=instance_id, reason=reason)]


def _place_instance(state: State, command: PlaceInstance, context: CommandContext) -> list[Event]:
    if command.instance_id in state.instances:
        return []
    card = context.catalog.resolve(command.model_id)
    if card is None:
        return [CommandRejected(command_id=command.command_id, error_kind="model_not_found",
                                message=f"unknown model {command.model_id!r}")]
    result = place(command, card, context.nodes, context.new_runner_id())
    if isinstance(result, PlacementError):
        return [CommandRejected(command_id=command.command_id, error_kind="placement_failed",
                                message=result.describe())]
    return [InstanceCreated(instance=result)]


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
    candidates = state.instances_of(command.params.model_id)
    if not candidates:
        return [CommandRejected(
            command_id=command.command_id, error_kind="model_not_found",
            message=f"no instance of {command.params.model_id} is placed; "
                    "place one with POST /place_instance")]
    instance = min(candidates, key=lambda i: (_load(state, i), i.instance_id))
    task = TextGenerationTask(task_id=context.new_task_id(), command_id=command.command_id,
                              instance_id=instance.instance_id,
                              owner_node=command.owner_node, params=command.params)
    return [TaskCreated(task=task)]
