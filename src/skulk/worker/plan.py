"""The worker's decisions: a pure `plan()` that returns at most one next step.

Order matters: reaping, shutdowns and cancellations come before anything new starts,
so a dying instance never gets fresh work and freed memory is reclaimed first.
"""

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Literal

from skulk.shared.types.ids import InstanceId, NodeId, RunnerId, TaskId
from skulk.shared.types.runners import (
    RunnerCreated,
    RunnerLoaded,
    RunnerStatus,
    is_serving,
)
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TextGenerationTask
from skulk.worker.engines.registry import engine_description

LifecycleRequest = Literal["load", "warm_up"]


@dataclass(frozen=True)
class LocalRunner:
    """What this worker knows first-hand about one of its runners."""

    runner_id: RunnerId
    instance_id: InstanceId
    status: RunnerStatus | None
    exited: bool
    in_flight: frozenset[TaskId]
    cancelling: frozenset[TaskId] = frozenset()
    requested: LifecycleRequest | None = None
    # Why it is past a deadline (to report, or to load and warm up), if it is.
    overdue: str | None = None
    killed: bool = False


@dataclass(frozen=True)
class ReapRunner:
    runner_id: RunnerId


@dataclass(frozen=True)
class ShutdownRunner:
    runner_id: RunnerId
    reason: str


@dataclass(frozen=True)
class KillRunner:
    """A runner past its deadline: killed, and its instance placed again elsewhere."""

    runner_id: RunnerId
    reason: str


@dataclass(frozen=True)
class CancelRunnerTask:
    runner_id: RunnerId
    task_id: TaskId


@dataclass(frozen=True)
class FetchWeights:
    """Bring the weights of a rank placed here onto this node, in the background."""

    instance_id: InstanceId
    runner_id: RunnerId


@dataclass(frozen=True)
class CreateRunner:
    instance_id: InstanceId
    runner_id: RunnerId


@dataclass(frozen=True)
class LoadModel:
    runner_id: RunnerId


@dataclass(frozen=True)
class WarmUp:
    runner_id: RunnerId


@dataclass(frozen=True)
class StartTask:
    runner_id: RunnerId
    task: TextGenerationTask


Step = (ReapRunner | KillRunner | ShutdownRunner | CancelRunnerTask | FetchWeights | CreateRunner
        | LoadModel | WarmUp | StartTask)


def plan(
    node_id: NodeId,
    state: State,
    runners: Mapping[RunnerId, LocalRunner],
    given_up: Set[InstanceId] = frozenset(),
    dispatched: Set[TaskId] = frozenset(),
    missing_weights: Set[RunnerId] = frozenset(),
    fetching: Set[RunnerId] = frozenset(),
) -> Step | None:
    """The single most urgent step for this node, or None when all is in order.

    `given_up` holds instances whose runners crashed too often here; `dispatched` holds
    every task this worker already handed to a runner (its acknowledgement may still be on
    its way through the master, so State can still say "pending"). A rank placed here
    that is in `missing_weights` gets its weights fetched before its runner is
    created (create → fetch → load → warm up → serve); `fetching` holds the ranks whose
    fetch runs in the background, which wait without holding up anything else.
    """
    return (
        _reap(runners)
        or _kill_overdue(runners)
        or _shutdown(node_id, state, runners)
        or _cancel(state, runners)
        or _create(node_id, state, runners, given_up, missing_weights, fetching)
        or _advance_lifecycle(state, runners)
        or _start_task(state, runners, dispatched)
    )


def _reap(runners: Mapping[RunnerId, LocalRunner]) -> Step | None:
    return next((ReapRunner(r.runner_id) for r in runners.values() if r.exited), None)


def _kill_overdue(runners: Mapping[RunnerId, LocalRunner]) -> Step | None:
    return next((KillRunner(r.runner_id, r.overdue) for r in runners.values()
                 if r.overdue is not None and not r.killed and not r.exited), None)


def _shutdown(node_id: NodeId, state: State, runners: Mapping[RunnerId, LocalRunner]
              ) -> Step | None:
    for runner in runners.values():
        instance = state.instances.get(runner.instance_id)
        if instance is None:
            return ShutdownRunner(runner.runner_id, f"instance {runner.instance_id} is gone")
        shard = instance.shards.get(runner.runner_id)
        if shard is None or shard.node_id != node_id:
            return ShutdownRunner(runner.runner_id, "shard moved off this node")
    return None


def _cancel(state: State, runners: Mapping[RunnerId, LocalRunner]) -> Step | None:
    for runner in runners.values():
        for task_id in sorted(runner.in_flight - runner.cancelling):
            task = state.tasks.get(task_id)
            if task is None or task.status == "cancelled":
                return CancelRunnerTask(runner.runner_id, task_id)
    return None


def _create(node_id: NodeId, state: State, runners: Mapping[RunnerId, LocalRunner],
            given_up: Set[InstanceId], missing_weights: Set[RunnerId],
            fetching: Set[RunnerId]) -> Step | None:
    for instance in state.instances.values():
        if instance.instance_id in given_up:
            continue
        for runner_id, shard in instance.shards.items():
            if shard.node_id != node_id or runner_id in runners or runner_id in fetching:
                continue
            if runner_id in missing_weights:
                return FetchWeights(instance.instance_id, runner_id)
            return CreateRunner(instance.instance_id, runner_id)
    return None


def _advance_lifecycle(state: State, runners: Mapping[RunnerId, LocalRunner]) -> Step | None:
    for runner in runners.values():
        if (isinstance(runner.status, RunnerCreated) and runner.requested is None
                and not _waits_for_devices(state, runner)):
            return LoadModel(runner.runner_id)
        if isinstance(runner.status, RunnerLoaded) and runner.requested != "warm_up":
            return WarmUp(runner.runner_id)
    return None


def _waits_for_devices(state: State, runner: LocalRunner) -> bool:
    """A head that runs the model on the other ranks' devices loads once they all serve
    (it sends them their layers as it loads)."""
    instance = state.instances.get(runner.instance_id)
    shard = None if instance is None else instance.shards.get(runner.runner_id)
    if instance is None or shard is None or shard.world_size == 1 or shard.rank != 0:
        return False
    if not engine_description(instance.engine).head_runs_model:
        return False
    return not all(is_serving(state.runners.get(other))
                   for other, s in instance.shards.items() if s.rank != 0)


def _takes_tasks(state: State, runner: LocalRunner) -> bool:
    """Whether the runner runs the model (a device server serves only its head)."""
    instance = state.instances[runner.instance_id]
    shard = instance.shards.get(runner.runner_id)
    return shard is None or engine_description(instance.engine).runs_model(
        shard.rank, shard.world_size)


def _all_ranks_serving(state: State, instance_id: InstanceId) -> bool:
    instance = state.instances[instance_id]
    return all(is_serving(state.runners.get(r)) for r in instance.shards)


def _start_task(state: State, runners: Mapping[RunnerId, LocalRunner],
                dispatched: Set[TaskId]) -> Step | None:
    by_instance = {r.instance_id: r for r in runners.values()
                   if r.instance_id in state.instances and _takes_tasks(state, r)}
    for task in state.tasks.values():  # insertion order is creation order
        if task.status != "pending" or task.task_id in dispatched:
            continue
        runner = by_instance.get(task.instance_id)
        if runner is None:
            continue
        if is_serving(runner.status) and _all_ranks_serving(state, task.instance_id):
            return StartTask(runner.runner_id, task)
    return None
