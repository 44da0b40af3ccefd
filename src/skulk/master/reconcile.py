"""The master's reconcile rules: pure checks that turn drift into events."""

from collections.abc import MutableMapping, Set

from skulk.shared.types.commands import PlaceInstance
from skulk.shared.types.events import Event, TaskDeleted, TaskStatusUpdated
from skulk.shared.types.ids import InstanceId, NodeId, TaskId, new_command_id, new_instance_id
from skulk.shared.types.instances import Instance
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES

# A finished task whose owner never said TaskFinished (the API node died, say) is
# forgotten after this long, so State does not grow without bound.
FINISHED_TASK_RETENTION_SECONDS = 300.0


def note_finished(terminal_since: MutableMapping[TaskId, float], event: Event,
                  state: State, now: float) -> None:
    """Keep `terminal_since` (when each task still held finished) up to date with `event`,
    just applied to `state`. A terminal status for a task already deleted is not entered:
    nothing would ever remove it (only `TaskDeleted` does, and it came first)."""
    if isinstance(event, TaskStatusUpdated) and event.status in TERMINAL_TASK_STATUSES:
        if event.task_id in state.tasks:
            terminal_since.setdefault(event.task_id, now)
    elif isinstance(event, TaskDeleted):
        terminal_since.pop(event.task_id, None)


def reconcile(
    state: State, terminal_since: MutableMapping[TaskId, float], now: float
) -> list[Event]:
    """Fail tasks orphaned by a vanished instance; forget long-finished tasks. A finished
    task `terminal_since` does not know (it finished under an earlier master) is entered
    with `now`, so tasks carried across a master change are forgotten too."""
    events: list[Event] = []
    for task in state.tasks.values():
        if task.status in TERMINAL_TASK_STATUSES:
            since = terminal_since.get(task.task_id)
            if since is None:  # finished under an earlier master: its time starts now
                terminal_since[task.task_id] = now
            elif now - since > FINISHED_TASK_RETENTION_SECONDS:
                events.append(TaskDeleted(task_id=task.task_id))
        elif task.instance_id not in state.instances:
            events.append(TaskStatusUpdated(
                task_id=task.task_id, status="failed",
                error=f"instance {task.instance_id} no longer exists"))
    return events


def instances_on_lost_nodes(state: State, live_nodes: Set[NodeId]) -> list[Instance]:
    """Instances with at least one shard on a node that is no longer a member."""
    return [i for i in state.instances.values()
            if any(shard.node_id not in live_nodes for shard in i.shards.values())]



def lost_past_grace(state: State, live_nodes: Set[NodeId],
                    lost_since: MutableMapping[InstanceId, float], now: float,
                    grace: float) -> list[Instance]:
    """Instances on a departed node for at least `grace` seconds. `lost_since` keeps when
    each was first seen lost, and forgets those no longer lost."""
    lost = instances_on_lost_nodes(state, live_nodes)
    lost_ids = {instance.instance_id for instance in lost}
    for instance_id in [i for i in lost_since if i not in lost_ids]:
        del lost_since[instance_id]
    return [instance for instance in lost
            if now - lost_since.setdefault(instance.instance_id, now) >= grace]


def replacement_for(instance: Instance) -> PlaceInstance:
    """The command that places a lost instance's model again, as it was placed."""
    return PlaceInstance(command_id=new_command_id(), instance_id=new_instance_id(),
                         model_id=instance.model_id, engine=instance.engine,
                         sharding=instance.sharding)
