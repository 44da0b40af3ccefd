"""What a node may propose about the cluster: only its own runners and the tasks its
runners serve. Workers propose nothing else, so anything else is a forgery by a member and
is refused before it reaches the order (a forged status for another node's runner or
task would change what every replica believes).

And what is moot: a task's status that comes after the task was deleted (the client's
`TaskFinished` reached the master before the runner's `complete` did, which on one node is
the usual order). Applied, it would change nothing; the master does not index it, and its
producer stops resending it once its own replica no longer holds the task."""

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


def moot_local_event(state: State, local: LocalEvent) -> bool:
    """Whether `local` speaks of a task `state` no longer holds (so applying it is a no-op).
    A worker only runs tasks its replica was told of, so a task it reports on and the
    master's State lacks was deleted."""
    event = local.event
    return isinstance(event, TaskStatusUpdated) and event.task_id not in state.tasks
