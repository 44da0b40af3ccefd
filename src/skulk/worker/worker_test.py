"""The worker loop with fake supervisors: lifecycle, dispatch, and the crash breaker."""

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import pytest

from skulk.models.catalog import ModelCatalog
from skulk.shared.replica import StateReplica
from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import Command, DeleteInstance
from skulk.shared.types.events import (
    Event,
    IndexedEvent,
    InstanceCreated,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
    TaskCreated,
)
from skulk.shared.types.ids import NodeId, SessionId, TaskId
from skulk.shared.types.runners import (
    RunnerCreated,
    RunnerFailed,
    RunnerLoaded,
    RunnerReady,
    RunnerStatus,
)
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TextGenerationTask
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing import factories as f
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.node_options import parse_node_engine_options
from skulk.worker.local_runner import SupervisorFactory
from skulk.worker.runner import messages
from skulk.worker.runner.deadlines import Progress
from skulk.worker.runner.flight_recorder import FlightRecorder
from skulk.worker.wiring import WorkerOutbox, WorkerReach, WorkerSettings
from skulk.worker.worker import Worker

T = TypeVar("T")


class FixedMemory:
    """The fit guard's readings: the same every time."""

    def __init__(self, reading: NodeTelemetry) -> None:
        self._reading = reading

    def read_memory(self) -> NodeTelemetry:
        return self._reading


class FakeSupervisor:
    """Reports through `on_event` like the real one; `crash` makes it exit at once."""

    created: list["FakeSupervisor"] = []
    crash = False

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self._status: RunnerStatus | None = None
        self._exited = False
        self.started: list[TextGenerationTask] = []
        self.pid: int | None = None
        self.tokens_per_second: float | None = None
        self.progress: Progress | None = None
        self.recorder = FlightRecorder()
        FakeSupervisor.created.append(self)

    @property
    def status(self) -> RunnerStatus | None:
        return self._status

    @property
    def exited(self) -> bool:
        return self._exited

    @property
    def in_flight(self) -> Mapping[TaskId, TextGenerationTask]:
        return {t.task_id: t for t in self.started}

    async def _report(self, status: RunnerStatus) -> None:
        self._status = status
        await self.kwargs["on_event"](RunnerStatusUpdated(runner_id=self.kwargs["runner_id"],
                                                          status=status))

    async def run(self) -> None:
        if FakeSupervisor.crash:
            await self._report(RunnerFailed(error="boom"))
            self._exited = True
            return
        await self._report(RunnerCreated())

    def send(self, message: messages.LifecycleMessage) -> None:
        loading = isinstance(message, messages.LoadModelRequest)
        next_status = RunnerLoaded() if loading else RunnerReady()
        self._status = next_status

    def start_task(self, task: TextGenerationTask) -> None:
        self.started.append(task)

    def cancel_task(self, task_id: TaskId) -> None:
        pass

    async def shutdown(self) -> None:
        pass

    async def kill(self, reason: str) -> None:
        await self._report(RunnerFailed(error=reason))
        self._exited = True


class Cluster:
    """A replica fed directly with the worker's own events, standing in for the master."""

    def __init__(self) -> None:
        self.replica = StateReplica()
        self.commands: list[Command] = []
        self._index = 0
        self.apply(StateSnapshotHydrated(state=State()))

    def apply(self, event: Event) -> None:
        self.replica.receive(IndexedEvent(master_node=NodeId("m"), index=self._index,
                                          session=SessionId("s"),
                                          event=event))
        self._index += 1

    async def publish_event(self, event: Event) -> None:
        self.apply(event)

    async def send_command(self, command: Command) -> None:
        self.commands.append(command)

    async def publish_chunk(self, chunk: DataChunk) -> None:
        pass

    def outbox(self) -> WorkerOutbox:
        """The worker's ends, into this cluster (looked up on each send, so a test can
        replace `publish_event`)."""
        return WorkerOutbox(events=_Through(lambda: self.publish_event),
                            chunks=_Through(lambda: self.publish_chunk),
                            commands=_Through(lambda: self.send_command))


class _Through(Generic[T]):
    """A `Sender` that awaits whatever function `current` names at the time."""

    def __init__(self, current: Callable[[], Callable[[T], Awaitable[None]]]) -> None:
        self._current = current

    async def send(self, item: T, /) -> None:
        await self._current()(item)


def worker(cluster: Cluster, supervisor: SupervisorFactory = FakeSupervisor,
           settings: WorkerSettings | None = None, reach: WorkerReach | None = None
           ) -> Worker:
    return Worker(node_id=f.NODE, replica=cluster.replica,
                  catalog=ModelCatalog.builtin(Path(".")),
                  outbox=cluster.outbox(), supervisor_factory=supervisor,
                  settings=settings, reach=reach)


@pytest.fixture(autouse=True)
def reset_fakes() -> None:
    FakeSupervisor.created = []
    FakeSupervisor.crash = False


@pytest.mark.anyio
async def test_runner_is_created_loaded_warmed_and_given_the_task() -> None:
    cluster = Cluster()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(worker(cluster).run)
        cluster.apply(InstanceCreated(instance=f.instance()))
        cluster.apply(TaskCreated(task=f.task()))
        with anyio.fail_after(5):
            while not (FakeSupervisor.created and FakeSupervisor.created[0].started):
                await anyio.sleep(0.01)
                # The fake's local status moves on without a report; tell State too.
                for fake in FakeSupervisor.created:
                    if isinstance(fake.status, RunnerReady) and not isinstance(
                            cluster.replica.state.runners.get(fake.kwargs["runner_id"]),
                            RunnerReady):
                        await fake._report(RunnerReady())
        tasks.cancel_scope.cancel()
    [fake] = FakeSupervisor.created
    assert [t.task_id for t in fake.started] == ["task-1"]
    assert fake.kwargs["config"].context_token_limit == 2048


@pytest.mark.anyio
async def test_three_crashes_within_a_minute_give_the_instance_up() -> None:
    FakeSupervisor.crash = True
    cluster = Cluster()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(worker(cluster).run)
        cluster.apply(InstanceCreated(instance=f.instance()))
        with anyio.fail_after(5):
            while not cluster.commands:
                await anyio.sleep(0.01)
        await anyio.sleep(0.1)
        tasks.cancel_scope.cancel()
    assert len(FakeSupervisor.created) == 3
    [command] = cluster.commands
    assert isinstance(command, DeleteInstance) and command.instance_id == "inst-1"


@pytest.mark.anyio
async def test_options_the_engine_cannot_take_give_the_instance_up_naming_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("skulk.worker.worker.engine_options",
                        lambda instance, batching=True: {"batching": "sometimes"})
    cluster = Cluster()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(worker(cluster).run)
        cluster.apply(InstanceCreated(instance=f.instance()))
        with anyio.fail_after(5):
            while not cluster.commands:
                await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()
    assert FakeSupervisor.created == []
    [command] = cluster.commands
    assert isinstance(command, DeleteInstance) and command.instance_id == "inst-1"
    [failed] = [r for r in cluster.replica.state.runners.values() if isinstance(r, RunnerFailed)]
    assert "batching='sometimes'" in failed.error


@pytest.mark.anyio
async def test_a_node_whose_memory_says_no_refuses_its_shard_and_starts_nothing() -> None:
    from skulk.shared.types.commands import RefusePlacement
    from skulk.testing.placement import node as reading

    cluster = Cluster()
    full = worker(cluster, reach=WorkerReach(memory=FixedMemory(
        reading(f.NODE, available=64 * 1024**2))))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(full.run)
        cluster.apply(InstanceCreated(instance=f.instance()))
        with anyio.fail_after(5):
            while not cluster.commands:
                await anyio.sleep(0.01)
        await anyio.sleep(0.1)
        tasks.cancel_scope.cancel()
    assert FakeSupervisor.created == []
    [command] = cluster.commands
    assert isinstance(command, RefusePlacement) and command.instance_id == "inst-1"
    assert command.node_id == f.NODE and "usable now" in command.reason


def test_engine_options_carry_the_ring_every_rank_dials() -> None:
    from skulk.shared.types.ids import InstanceId, ModelId, NodeId, RunnerId
    from skulk.shared.types.instances import Instance, ShardAssignment
    from skulk.worker.rank_options import engine_options

    shards = {RunnerId(f"r{rank}"): ShardAssignment(
        node_id=NodeId(f"n{rank}"), rank=rank, world_size=2, start_layer=15 * rank,
        end_layer=15 * (rank + 1), ring_host=f"10.0.0.{rank + 1}") for rank in (1, 0)}
    split = Instance(instance_id=InstanceId("i"), model_id=ModelId("m"), engine="mlx",
                     sharding="pipeline", shards=shards, context_token_limit=8192,
                     ring_port=53000)
    assert engine_options(split) == {"sharding": "pipeline",
                                     "ring_hosts": ["10.0.0.1:53000", "10.0.0.2:53001"]}
    assert engine_options(f.instance()) == {}
    assert engine_options(f.instance(), batching=False) == {"batching": False}
    assert "batching" not in engine_options(split, batching=False), \
        "a node's --no-batching cannot give one rank of a split another batch shape"


def test_shard_options_carry_the_gpu_layers_the_master_stamped() -> None:
    from skulk.shared.types.ids import NodeId
    from skulk.shared.types.instances import ShardAssignment
    from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
    from skulk.worker.rank_options import shard_options

    shard = ShardAssignment(node_id=NodeId("n"), rank=0, world_size=1, start_layer=0,
                            end_layer=32)
    assert shard_options(shard) == {}  # no GPU: engines without the option never see it
    offloading = shard_options(shard.model_copy(update={"gpu_layers": 12}))
    assert offloading == {"gpu_layers": 12}
    assert LlamaCppOptions.parse(offloading).gpu_layers == 12


@pytest.mark.anyio
async def test_the_nodes_engine_options_reach_its_runners_under_the_masters(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def weights(*_: object) -> Path:
        return Path("/weights")
    monkeypatch.setattr("skulk.worker.worker.loadable_weights", weights)
    cluster = Cluster()
    node_options = parse_node_engine_options(
        ["mlx.draft_adaptive=off", "mlx.drafter=none", "llama_cpp.max_batch=3"])
    split = f.instance().model_copy(update={"engine": "mlx", "ring_port": 50100})
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(Worker(
            node_id=f.NODE, replica=cluster.replica, catalog=ModelCatalog.builtin(Path(".")),
            outbox=cluster.outbox(), supervisor_factory=FakeSupervisor,
            settings=WorkerSettings(node_engine_options=node_options)).run)
        cluster.apply(InstanceCreated(instance=split))
        # generous: a loaded machine (xdist beside multi-process MLX tests) once took over 5 s
        with anyio.fail_after(30):
            while not FakeSupervisor.created:
                await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()
    options = FakeSupervisor.created[0].kwargs["config"].options
    assert isinstance(options, MlxOptions)  # parsed once, by the worker, and carried typed
    assert options.draft_adaptive is False
    assert options.drafter == "none"  # over the card's default drafter
    assert options.ring_hosts == ["127.0.0.1:50100"]  # stamped by the master
    assert options.max_batch == MlxOptions().max_batch  # llama.cpp's is another engine's


async def run_until_it_commands(running: Worker, cluster: Cluster) -> None:
    """Run the worker on an instance of this node until it sends the master a command."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(running.run)
        cluster.apply(InstanceCreated(instance=f.instance()))
        with anyio.fail_after(10):
            while not cluster.commands:
                await anyio.sleep(0.05)
        tasks.cancel_scope.cancel()


class StuckSupervisor(FakeSupervisor):
    """A runner that reports `created` and then hangs: it never loads."""

    def send(self, message: messages.LifecycleMessage) -> None:
        pass


@pytest.mark.anyio
async def test_a_runner_that_never_loads_is_killed_and_placed_elsewhere() -> None:
    from skulk.shared.types.commands import ReplaceInstance
    from skulk.worker.runner.deadlines import RunnerDeadlines

    cluster = Cluster()
    stuck = worker(cluster, StuckSupervisor, settings=WorkerSettings(
        deadlines=RunnerDeadlines(first_report_seconds=0.2, load_base_seconds=0.2,
                                  load_bytes_per_second=1e12)))
    await run_until_it_commands(stuck, cluster)
    [command] = cluster.commands
    assert isinstance(command, ReplaceInstance) and command.instance_id == "inst-1"
    assert command.failed_node == f.NODE and "did not load and warm up" in command.reason
    [failed] = [r for r in cluster.replica.state.runners.values() if isinstance(r, RunnerFailed)]
    assert "within 0 s" in failed.error and len(StuckSupervisor.created) == 1


class StalledSupervisor(FakeSupervisor):
    """A runner that loads, warms up and then, running a request, falls silent."""

    @property
    def progress(self) -> Progress | None:
        if not isinstance(self._status, RunnerReady):
            return None
        return Progress(quiet_since=0.0, produced=True)

    @progress.setter
    def progress(self, value: Progress | None) -> None:
        pass


@pytest.mark.anyio
async def test_a_runner_silent_mid_request_is_killed_and_placed_elsewhere() -> None:
    from skulk.shared.types.commands import ReplaceInstance
    from skulk.worker.runner.deadlines import RunnerDeadlines

    cluster = Cluster()
    stalled = worker(cluster, StalledSupervisor, settings=WorkerSettings(
        deadlines=RunnerDeadlines(first_token_seconds=0.2, stall_seconds=0.2)))
    await run_until_it_commands(stalled, cluster)
    [command] = cluster.commands
    assert isinstance(command, ReplaceInstance) and command.failed_node == f.NODE
    assert "made no progress" in command.reason
