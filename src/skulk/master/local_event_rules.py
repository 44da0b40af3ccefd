"""What a node may propose about the cluster: only its own runners and the tasks its
runners serve. Workers propose nothing else, so anything else is a forgery by a member and
is refused before it reaches the order (a forged status for another node's runner or
task would change what every replica believes)."""

from skulk.shared.types.events import (
    LocalEvent,
    RunnerStatusUpdated,
    TaskStatusUpdated,
    WeightsFetchProgress,
    WeightsReady,
)
from skulk.shared.types.state import State


def refused_local_event(state: State, local: LocalEvent) -> str | None:
    """Why the master must not index `local`, or None."""
    event, origin = local.event, local.origin
    if isinstance(event, RunnerStatusUpdated | WeightsFetchProgress | WeightsReady):
        owners = {shard.node_id for instance in state.instances.values()
                  for runner_id, shard in instance.shards.items()
                  if runner_id == event.runner_id}
        return "another_nodes_runner" if owners and origin not in owners else None
    if isinstance(event, TaskStatusUpdated):
        task = state.tasks.get(event.task_id)
        instance = None if task is None else state.instances.get(task.instance_id)
        if instance is not None and all(shard.node_id != origin
                                        for shard in instance.shards.values()):
            return "another_nodes_task"
        return None
    return "not_a_worker_event"
