"""The worker loop: ask `plan()` for the next step, carry it out, report what happened."""

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

import anyio
from anyio.abc import TaskGroup
from loguru import logger

from skulk.models.catalog import ModelCatalog
from skulk.shared.replica import StateReplica
from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import Command, DeleteInstance
from skulk.shared.types.events import Event, RunnerStatusUpdated, StateSnapshotHydrated
from skulk.shared.types.ids import (
    InstanceId,
    NodeId,
    RunnerId,
    SessionId,
    TaskId,
    new_command_id,
)
from skulk.shared.types.instances import Instance
from skulk.shared.types.runners import RunnerFailed, RunnerStatus, is_serving
from skulk.shared.types.tasks import TextGenerationTask
from skulk.shared.types.telemetry import WarmModel
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.plan import (
    CancelRunnerTask,
    CreateRunner,
    LifecycleRequest,
    LoadModel,
    LocalRunner,
    ReapRunner,
    ShutdownRunner,
    StartTask,
    Step,
    WarmUp,
    plan,
)
from skulk.worker.runner import messages
from skulk.worker.runner.crash_window import CrashWindow
from skulk.worker.runner.supervisor import RunnerSupervisor


class Supervisor(Protocol):
    """The parts of `RunnerSupervisor` the worker uses (fakes implement this in tests)."""

    @property
    def status(self) -> RunnerStatus | None: ...
    @property
    def exited(self) -> bool: ...
    @property
    def in_flight(self) -> Mapping[TaskId, TextGenerationTask]: ...
    async def run(self) -> None: ...
    def send(self, message: messages.LoadModel | messages.WarmUp | messages.Shutdown) -> None: ...
    def start_task(self, task: TextGenerationTask) -> None: ...
    def cancel_task(self, task_id: TaskId) -> None: ...
    async def shutdown(self) -> None: ...


SupervisorFactory = Callable[..., Supervisor]


class _Runner:
    def __init__(self, supervisor: Supervisor, instance_id: InstanceId) -> None:
        self.supervisor = supervisor
        self.instance_id = instance_id
        self.requested: LifecycleRequest | None = None
        self.cancelling: set[TaskId] = set()


class Worker:
    """Runs this node's share of every instance; see `plan()` for the decisions."""

    def __init__(
        self,
        *,
        node_id: NodeId,
        replica: StateReplica,
        catalog: ModelCatalog,
        publish_event: Callable[[Event], Awaitable[None]],
        publish_chunk: Callable[[DataChunk], Awaitable[None]],
        send_command: Callable[[Command], Awaitable[None]],
        supervisor_factory: SupervisorFactory = RunnerSupervisor,
        engine_threads: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._node_id = node_id
        self._replica = replica
        self._catalog = catalog
        self._publish_event = publish_event
        self._publish_chunk = publish_chunk
        self._send_command = send_command
        self._supervisor_factory = supervisor_factory
        self._engine_threads = engine_threads
        self._clock = clock
        self._runners: dict[RunnerId, _Runner] = {}
        self._dispatched: set[TaskId] = set()
        self._given_up: set[InstanceId] = set()
        self._crashes: dict[InstanceId, CrashWindow] = {}
        self._wake = anyio.Event()
        self._reported_session: SessionId | None = None

    def local_runners(self) -> dict[RunnerId, LocalRunner]:
        return {
            runner_id: LocalRunner(
                runner_id=runner_id,
                instance_id=runner.instance_id,
                status=runner.supervisor.status,
                exited=runner.supervisor.exited,
                in_flight=frozenset(runner.supervisor.in_flight),
                cancelling=frozenset(runner.cancelling),
                requested=runner.requested,
            )
            for runner_id, runner in self._runners.items()
        }

    def warm_models(self) -> list[WarmModel]:
        """This node's capability card: runners that serve, and how fast they decoded."""
        warm = []
        state = self._replica.state
        for runner_id, runner in self._runners.items():
            instance = state.instances.get(runner.instance_id)
            if instance is None or not is_serving(runner.supervisor.status):
                continue
            shard = instance.shards[runner_id]
            role = "whole" if shard.world_size == 1 else (
                f"rank {shard.rank} of {shard.world_size}")
            warm.append(WarmModel(model_id=instance.model_id, instance_id=instance.instance_id,
                                  role=role,
                                  tokens_per_second=getattr(runner.supervisor,
                                                            "tokens_per_second", None)))
        return warm

    def runner_pid(self, runner_id: RunnerId) -> int | None:
        runner = self._runners.get(runner_id)
        return None if runner is None else getattr(runner.supervisor, "pid", None)

    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._watch_replica)
                await self._plan_loop(tasks)
        finally:
            with anyio.CancelScope(shield=True):
                for runner in list(self._runners.values()):
                    await runner.supervisor.shutdown()

    def wake(self) -> None:
        self._wake.set()

    async def _watch_replica(self) -> None:
        async with self._replica.subscribe() as applied:
            async for indexed in applied:
                if isinstance(indexed.event, StateSnapshotHydrated) and (
                        indexed.session != self._reported_session):
                    self._reported_session = indexed.session
                    await self._report_runner_statuses()
                self.wake()

    async def _report_runner_statuses(self) -> None:
        """A new master session may lack our runners' latest statuses: report them again."""
        for runner_id, runner in self._runners.items():
            status = runner.supervisor.status
            if status is not None:
                await self._publish_event(RunnerStatusUpdated(runner_id=runner_id, status=status))

    async def _plan_loop(self, tasks: TaskGroup) -> None:
        while True:
            self._wake = anyio.Event()
            state = self._replica.state
            self._dispatched &= set(state.tasks)
            step = plan(self._node_id, state, self.local_runners(), self._given_up,
                        self._dispatched)
            if step is None:
                # Supervisors wake us on every report; the timeout is only a backstop.
                with anyio.move_on_after(1.0):
                    await self._wake.wait()
                continue
            logger.debug("worker step: {}", step)
            await self._execute(step, tasks)

    async def _execute(self, step: Step, tasks: TaskGroup) -> None:
        match step:
            case ReapRunner(runner_id):
                await self._reap(runner_id)
            case ShutdownRunner(runner_id, reason):
                logger.info("shutting down runner {}: {}", runner_id, reason)
                runner = self._runners.pop(runner_id)
                await runner.supervisor.shutdown()
            case CancelRunnerTask(runner_id, task_id):
                self._runners[runner_id].cancelling.add(task_id)
                self._runners[runner_id].supervisor.cancel_task(task_id)
            case CreateRunner(instance_id, runner_id):
                await self._create(self._replica.state.instances[instance_id], runner_id, tasks)
            case LoadModel(runner_id):
                self._runners[runner_id].requested = "load"
                self._runners[runner_id].supervisor.send(messages.LoadModel())
            case WarmUp(runner_id):
                self._runners[runner_id].requested = "warm_up"
                self._runners[runner_id].supervisor.send(messages.WarmUp())
            case StartTask(runner_id, task):
                self._dispatched.add(task.task_id)
                self._runners[runner_id].supervisor.start_task(task)

    async def _create(self, instance: Instance, runner_id: RunnerId, tasks: TaskGroup) -> None:
        card = self._catalog.resolve(instance.model_id)
        path = None if card is None else self._catalog.local_path(card, "gguf")
        if path is None:
            await self._give_up(instance.instance_id, runner_id,
                                f"weights of {instance.model_id} are not on node {self._node_id}")
            return
        shard = instance.shards[runner_id]
        config = EngineConfig(model_path=str(path),
                              context_token_limit=instance.context_token_limit,
                              n_threads=self._engine_threads, start_layer=shard.start_layer,
                              end_layer=shard.end_layer, world_size=shard.world_size,
                              rank=shard.rank)
        supervisor = self._supervisor_factory(
            runner_id=runner_id, instance_id=instance.instance_id,
            engine_name=instance.engine, config=config,
            on_event=self._on_runner_event, on_chunk=self._publish_chunk)
        self._runners[runner_id] = _Runner(supervisor, instance.instance_id)
        tasks.start_soon(supervisor.run)

    async def _on_runner_event(self, event: Event) -> None:
        await self._publish_event(event)
        self.wake()

    async def _reap(self, runner_id: RunnerId) -> None:
        runner = self._runners.pop(runner_id)
        window = self._crashes.setdefault(runner.instance_id, CrashWindow())
        if window.record(self._clock()):
            status = runner.supervisor.status
            why = status.error if isinstance(status, RunnerFailed) else "runner exited"
            await self._give_up(runner.instance_id, runner_id,
                                f"runner crashed 3 times within 60 s (last: {why})")

    async def _give_up(self, instance_id: InstanceId, runner_id: RunnerId, reason: str) -> None:
        logger.error("giving up instance {}: {}", instance_id, reason)
        self._given_up.add(instance_id)
        await self._publish_event(
            RunnerStatusUpdated(runner_id=runner_id, status=RunnerFailed(error=reason)))
        await self._send_command(
            DeleteInstance(command_id=new_command_id(), instance_id=instance_id))
