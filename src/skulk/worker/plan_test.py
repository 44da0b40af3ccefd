from skulk.shared.types.events import (
    InstanceCreated,
    RunnerStatusUpdated,
    TaskCreated,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId, TaskId
from skulk.shared.types.runners import (
    RunnerCreated,
    RunnerLoaded,
    RunnerLoading,
    RunnerReady,
    RunnerStatus,
)
from skulk.shared.types.state import State
from skulk.testing import factories as f
from skulk.worker.plan import (
    CancelRunnerTask,
    CreateRunner,
    FetchWeights,
    LifecycleRequest,
    LoadModel,
    LocalRunner,
    ReapRunner,
    ShutdownRunner,
    StartTask,
    WarmUp,
    plan,
)

ME = f.NODE
R1, I1, T1 = RunnerId("run-1"), InstanceId("inst-1"), TaskId("task-1")


state_with = f.state_with


READY_STATUS = RunnerReady()


def local(status: RunnerStatus | None = READY_STATUS, *, exited: bool = False,
          in_flight: frozenset[TaskId] = frozenset(),
          cancelling: frozenset[TaskId] = frozenset(),
          requested: LifecycleRequest | None = None) -> dict[RunnerId, LocalRunner]:
    return {R1: LocalRunner(runner_id=R1, instance_id=I1, status=status, exited=exited,
                            in_flight=in_flight, cancelling=cancelling, requested=requested)}


PLACED = InstanceCreated(instance=f.instance())
READY = RunnerStatusUpdated(runner_id=R1, status=RunnerReady())


def test_nothing_to_do_on_an_empty_cluster() -> None:
    assert plan(ME, State(), {}) is None


def test_a_shard_here_without_runner_is_created() -> None:
    assert plan(ME, state_with(PLACED), {}) == CreateRunner(I1, R1)


def test_a_shard_on_another_node_is_not_ours() -> None:
    other = InstanceCreated(instance=f.instance(node=NodeId("node-b")))
    assert plan(ME, state_with(other), {}) is None


def test_a_rank_without_its_weights_fetches_them_first_without_blocking_the_rest() -> None:
    assert plan(ME, state_with(PLACED), {}, missing_weights={R1}) == FetchWeights(I1, R1)
    # While its fetch runs, nothing is created for it and other work goes on.
    assert plan(ME, state_with(PLACED), {}, missing_weights={R1}, fetching={R1}) is None
    other = f.instance(instance_id="inst-2", runner_id="run-2")
    both = state_with(PLACED, InstanceCreated(instance=other))
    assert plan(ME, both, {}, missing_weights={R1}, fetching={R1}) == CreateRunner(
        InstanceId("inst-2"), RunnerId("run-2"))
    # Once the weights are here, the runner is created.
    assert plan(ME, state_with(PLACED), {}, fetching=set()) == CreateRunner(I1, R1)


def test_given_up_instances_are_not_recreated() -> None:
    assert plan(ME, state_with(PLACED), {}, given_up={I1}) is None


def test_lifecycle_goes_load_then_warm_up_once_each() -> None:
    state = state_with(PLACED)
    assert plan(ME, state, local(RunnerCreated())) == LoadModel(R1)
    assert plan(ME, state, local(RunnerCreated(), requested="load")) is None
    assert plan(ME, state, local(RunnerLoading(), requested="load")) is None
    assert plan(ME, state, local(RunnerLoaded(), requested="load")) == WarmUp(R1)
    assert plan(ME, state, local(RunnerLoaded(), requested="warm_up")) is None


def test_pending_task_starts_once_all_ranks_serve() -> None:
    state = state_with(PLACED, TaskCreated(task=f.task()))
    assert plan(ME, state, local()) is None  # State has not heard the runner is ready
    state = state_with(PLACED, READY, TaskCreated(task=f.task()))
    step = plan(ME, state, local())
    assert isinstance(step, StartTask) and step.task.task_id == T1
    assert plan(ME, state, local(), dispatched={T1}) is None


def test_exited_runner_is_reaped_before_anything_else() -> None:
    state = state_with(PLACED, READY, TaskCreated(task=f.task()))
    assert plan(ME, state, local(exited=True)) == ReapRunner(R1)


def test_runner_of_a_deleted_instance_is_shut_down_before_new_work() -> None:
    state = state_with(InstanceCreated(instance=f.instance("inst-2", "run-2")))
    step = plan(ME, state, local())
    assert isinstance(step, ShutdownRunner) and step.runner_id == R1


def test_cancelled_or_forgotten_in_flight_tasks_are_cancelled_once() -> None:
    cancelled = state_with(PLACED, READY, TaskCreated(task=f.task()),
                           TaskStatusUpdated(task_id=T1, status="cancelled"))
    assert plan(ME, cancelled, local(in_flight=frozenset({T1}))) == CancelRunnerTask(R1, T1)
    forgotten = state_with(PLACED, READY)
    assert plan(ME, forgotten, local(in_flight=frozenset({T1}))) == CancelRunnerTask(R1, T1)
    assert plan(ME, forgotten, local(in_flight=frozenset({T1}),
                                     cancelling=frozenset({T1}))) is None


def _llama_split() -> tuple[InstanceCreated, RunnerId]:
    """A two-rank llama.cpp pipeline: its head here (R1), its device server elsewhere."""
    from skulk.shared.types.instances import Instance, ShardAssignment

    device = RunnerId("run-2")
    shards = {R1: ShardAssignment(node_id=ME, rank=0, world_size=2, start_layer=0,
                                  end_layer=15),
              device: ShardAssignment(node_id=NodeId("other"), rank=1, world_size=2,
                                      start_layer=15, end_layer=30)}
    return InstanceCreated(instance=Instance(
        instance_id=I1, model_id=f.MODEL, engine="llama_cpp", sharding="pipeline",
        shards=shards, context_token_limit=2048, ring_port=53000)), device


def test_a_llama_cpp_head_loads_only_once_its_device_servers_serve() -> None:
    placed, device = _llama_split()
    waiting = state_with(placed, RunnerStatusUpdated(runner_id=device, status=RunnerLoading()))
    assert plan(ME, waiting, local(RunnerCreated())) is None
    serving = state_with(placed, RunnerStatusUpdated(runner_id=device, status=RunnerReady()))
    assert plan(ME, serving, local(RunnerCreated())) == LoadModel(R1)


def test_a_device_server_rank_loads_at_once_and_takes_no_tasks() -> None:
    placed, device = _llama_split()
    here = {device: LocalRunner(runner_id=device, instance_id=I1, status=RunnerCreated(),
                                exited=False, in_flight=frozenset())}
    assert plan(NodeId("other"), state_with(placed), here) == LoadModel(device)
    task = TaskCreated(task=f.task(instance_id=I1))
    both_ready = state_with(placed, task,
                            RunnerStatusUpdated(runner_id=device, status=RunnerReady()),
                            RunnerStatusUpdated(runner_id=R1, status=RunnerReady()))
    ready_here = {device: LocalRunner(runner_id=device, instance_id=I1, status=RunnerReady(),
                                      exited=False, in_flight=frozenset())}
    assert plan(NodeId("other"), both_ready, ready_here) is None
    assert plan(ME, both_ready, local()) == StartTask(R1, task.task)


def test_an_overdue_runner_is_killed_once_before_new_work() -> None:
    from dataclasses import replace

    from skulk.worker.plan import KillRunner
    state = state_with(PLACED, TaskCreated(task=f.task()))
    [runner] = local(RunnerLoading(), requested="load").values()
    overdue = replace(runner, overdue="did not load within 9 s")
    assert plan(ME, state, {R1: overdue}) == KillRunner(R1, "did not load within 9 s")
    assert plan(ME, state, {R1: replace(overdue, killed=True)}) is None
    # Once its death is seen, it is reaped like any other.
    assert plan(ME, state, {R1: replace(overdue, killed=True, exited=True)}) == ReapRunner(R1)
