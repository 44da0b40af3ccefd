"""The worker loop: ask `plan()` for the next step, carry it out, report what happened."""

import time
from collections.abc import Callable

import anyio
from anyio.abc import TaskGroup
from loguru import logger

from skulk.models.catalog import ModelCatalog
from skulk.shared.replica import StateReplica
from skulk.shared.types.commands import (
    DeleteInstance,
    RefusePlacement,
    ReplaceInstance,
)
from skulk.shared.types.events import Event, RunnerStatusUpdated
from skulk.shared.types.ids import (
    InstanceId,
    NodeId,
    RunnerId,
    SessionId,
    TaskId,
    new_command_id,
)
from skulk.shared.types.instances import Instance
from skulk.shared.types.runners import RunnerFailed, is_serving
from skulk.shared.types.telemetry import WarmModel
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.options import EngineOptionError
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.engines.registry import engine_description
from skulk.worker.fit_guard import refusal
from skulk.worker.local_runner import LocalRunnerHandle, SupervisorFactory
from skulk.worker.plan import (
    CancelRunnerTask,
    CreateRunner,
    FetchWeights,
    KillRunner,
    LoadModel,
    LocalRunner,
    ReapRunner,
    ShutdownRunner,
    StartTask,
    Step,
    WarmUp,
    plan,
)
from skulk.worker.rank_options import (
    agreement_options,
    drafting_options,
    engine_options,
    shard_options,
)
from skulk.worker.runner import messages
from skulk.worker.runner.crash_window import CrashWindow
from skulk.worker.runner.direct_streams import DirectStreams
from skulk.worker.runner.supervisor import RunnerSupervisor
from skulk.worker.weights_fetch import (
    NoWeights,
    WeightsFetcher,
    loadable_weights,
    stage_layers,
)
from skulk.worker.wiring import WorkerOutbox, WorkerReach, WorkerSettings

# The plan runs again at least this often (its deadlines), woken or not.
PLAN_BACKSTOP_SECONDS = 1.0


class Worker:
    """Runs this node's share of every instance; see `plan()` for the decisions."""

    def __init__(
        self,
        *,
        node_id: NodeId,
        replica: StateReplica,
        catalog: ModelCatalog,
        outbox: WorkerOutbox,
        settings: WorkerSettings | None = None,
        reach: WorkerReach | None = None,
        supervisor_factory: SupervisorFactory = RunnerSupervisor,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._node_id = node_id
        self._replica = replica
        self._catalog = catalog
        self._outbox = outbox
        self._settings = settings = settings or WorkerSettings()
        self._reach = reach = reach or WorkerReach()
        self._supervisor_factory = supervisor_factory
        self._clock = clock
        self._fetcher = None if reach.weight_sources is None else WeightsFetcher(
            node_id=node_id, catalog=catalog, publish_event=outbox.events.send,
            sources_for=reach.weight_sources)
        self._deadlines = settings.deadlines
        # The tasks of this node's runners whose streams the API may make direct (None:
        # `--no-native-stream`, no relays).
        self.direct_streams = DirectStreams() if settings.native_stream else None
        self._runners: dict[RunnerId, LocalRunnerHandle] = {}
        self._dispatched: set[TaskId] = set()
        self._given_up: set[InstanceId] = set()
        self._crashes: dict[InstanceId, CrashWindow] = {}
        self.runner_failures = 0
        self._wake = anyio.Event()
        self._reported_session: SessionId | None = None

    def local_runners(self) -> dict[RunnerId, LocalRunner]:
        now = self._clock()
        return {runner_id: runner.view(runner_id, now, self._deadlines)
                for runner_id, runner in self._runners.items()}

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
                                  tokens_per_second=runner.supervisor.tokens_per_second))
        return warm

    def runners_report(self) -> list[dict[str, object]]:
        """Each runner on this node: process, status, work in flight, flight recorder."""
        report: list[dict[str, object]] = []
        for runner_id, runner in self._runners.items():
            supervisor = runner.supervisor
            status = supervisor.status
            report.append({
                "runner_id": runner_id, "instance_id": runner.instance_id,
                "pid": supervisor.pid,
                "status": None if status is None else status.model_dump(),
                "tasks_in_flight": sorted(supervisor.in_flight),
                "tokens_per_second": supervisor.tokens_per_second,
                "flight_recorder": supervisor.recorder.entries(),
                "flight_recorder_dropped": supervisor.recorder.dropped})
        return report

    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tasks:
                self._replica.wake_on_apply(self.wake)
                tasks.start_soon(self._backstop)
                await self._plan_loop(tasks)
        finally:
            with anyio.CancelScope(shield=True):
                for runner_id, runner in list(self._runners.items()):
                    await runner.supervisor.shutdown()
                    self._close_links(runner_id)

    def wake(self) -> None:
        self._wake.set()

    async def _backstop(self) -> None:
        """A plan pass at least every `PLAN_BACKSTOP_SECONDS`, for the deadlines: the
        replica (`wake_on_apply`) and the supervisors wake the plan on everything else."""
        while True:
            await anyio.sleep(PLAN_BACKSTOP_SECONDS)
            self.wake()

    async def _report_runner_statuses(self) -> None:
        """A new master session may lack our runners' latest statuses: report them again."""
        self._reported_session = self._replica.session
        for runner_id, runner in self._runners.items():
            status = runner.supervisor.status
            if status is not None:
                await self._outbox.events.send(
                    RunnerStatusUpdated(runner_id=runner_id, status=status))

    async def _plan_loop(self, tasks: TaskGroup) -> None:
        while True:
            self._wake = anyio.Event()
            if self._replica.session != self._reported_session:
                await self._report_runner_statuses()
            state = self._replica.state
            self._dispatched &= set(state.tasks)
            fetcher = self._fetcher
            step = plan(self._node_id, state, self.local_runners(), self._given_up,
                        self._dispatched,
                        missing_weights=(fetcher.missing(state, self._given_up)
                                         if fetcher else frozenset()),
                        fetching=fetcher.fetching if fetcher else frozenset())
            if step is None:
                await self._wake.wait()  # no cancel scope a pass: `_backstop` ticks
                continue
            logger.debug("worker step: {}", step)
            await self._execute(step, tasks)

    async def _execute(self, step: Step, tasks: TaskGroup) -> None:
        match step:
            case ReapRunner(runner_id):
                await self._reap(runner_id)
            case KillRunner(runner_id, reason):
                self._runners[runner_id].killed_for = reason
                self._runners[runner_id].killed_running = bool(
                    self._runners[runner_id].supervisor.in_flight)
                await self._runners[runner_id].supervisor.kill(reason)
            case ShutdownRunner(runner_id, reason):
                logger.info("shutting down runner {}: {}", runner_id, reason)
                runner = self._runners.pop(runner_id)
                await runner.supervisor.shutdown()
                self._close_links(runner_id)
            case CancelRunnerTask(runner_id, task_id):
                self._runners[runner_id].cancelling.add(task_id)
                self._runners[runner_id].supervisor.cancel_task(task_id)
            case FetchWeights(instance_id, runner_id):
                assert self._fetcher is not None  # plan() asks only when it is set
                self._fetcher.fetching.add(runner_id)
                tasks.start_soon(self._fetch, self._replica.state.instances[instance_id],
                                 runner_id)
            case CreateRunner(instance_id, runner_id):
                await self._create(self._replica.state.instances[instance_id], runner_id, tasks)
            case LoadModel(runner_id):
                self._runners[runner_id].requested = "load"
                self._runners[runner_id].load_asked_at = self._clock()
                self._runners[runner_id].supervisor.send(messages.LoadModelRequest())
            case WarmUp(runner_id):
                self._runners[runner_id].requested = "warm_up"
                self._runners[runner_id].supervisor.send(messages.WarmUpRequest())
            case StartTask(runner_id, task):
                self._dispatched.add(task.task_id)
                self._runners[runner_id].supervisor.start_task(task)

    async def _create(self, instance: Instance, runner_id: RunnerId, tasks: TaskGroup) -> None:
        card = self._catalog.resolve(instance.model_id)
        engine = engine_description(instance.engine)
        shard = instance.shards[runner_id]
        if card is not None and self._reach.memory is not None:
            why = refusal(card, instance, shard, self._reach.memory.read_memory())
            if why is not None:
                await self._refuse(instance.instance_id, runner_id, why)
                return
        runs_model = engine.runs_model(shard.rank, shard.world_size)
        path = None if card is None or not runs_model else await loadable_weights(
            self._catalog, card, engine, stage_layers(instance, shard))
        if path is None and runs_model:
            await self._give_up(instance.instance_id, runner_id,
                                f"weights of {instance.model_id} for {instance.engine} are not "
                                f"on node {self._node_id}")
            return
        links = await self._device_options(instance, runner_id, engine)
        if links is None:
            return
        model_path = "" if path is None else str(path)
        drafting = await drafting_options(self._catalog, card, instance, engine,
                                          self._reach.remote_drafting)
        settings = self._settings
        node_options = settings.node_engine_options.get(instance.engine)
        try:  # the one parse of this runner's options: the engine gets them typed
            options = engine.options.parse({
                **drafting, **(node_options.given() if node_options else {}),
                **engine_options(instance, batching=settings.batching),
                **shard_options(shard), **links,
                **(await agreement_options(instance, model_path) if runs_model else {})})
        except EngineOptionError as error:
            self._close_links(runner_id)
            await self._give_up(instance.instance_id, runner_id, str(error))
            return
        config = EngineConfig(model_path=model_path,
                              context_token_limit=instance.context_token_limit,
                              n_threads=settings.engine_threads, start_layer=shard.start_layer,
                              end_layer=shard.end_layer, world_size=shard.world_size,
                              rank=shard.rank, options=options)
        supervisor = self._supervisor_factory(
            runner_id=runner_id, instance_id=instance.instance_id, node_id=self._node_id,
            engine=engine, config=config,
            on_event=self._on_runner_event, on_chunk=self._outbox.chunks.send,
            on_chunk_now=None if self._outbox.chunks_now is None
            else self._outbox.chunks_now.send_now,
            on_spans=None if self._outbox.spans is None else self._outbox.spans.send,
            direct_streams=self.direct_streams)
        self._runners[runner_id] = LocalRunnerHandle(
            supervisor, instance.instance_id, started_at=self._clock(),
            weights_bytes=max((s.size_bytes for s in card.sources), default=0)
            if card is not None and runs_model else 0)
        if links and self._reach.device_links is not None:  # revocations reach it
            self._reach.device_links.attach(runner_id, supervisor.send)
        tasks.start_soon(supervisor.run)

    async def _device_options(self, instance: Instance, runner_id: RunnerId,
                              engine: EngineDescription) -> dict[str, str] | None:
        """The link options of a rank of a split instance whose head runs the model ({}
        for any other rank); None when this node cannot give them (the instance is given
        up)."""
        if not engine.head_runs_model or len(instance.shards) < 2:
            return {}
        if self._reach.device_links is None:
            await self._give_up(instance.instance_id, runner_id,
                                f"node {self._node_id} cannot link the ranks of a split "
                                f"{instance.engine} instance")
            return None
        try:
            return await self._reach.device_links.options_for(instance, runner_id)
        except (OSError, ValueError) as error:
            self._close_links(runner_id)  # those that did open
            await self._give_up(instance.instance_id, runner_id,
                                f"the {instance.engine} device links could not open: {error}")
            return None

    def _close_links(self, runner_id: RunnerId) -> None:
        if self._reach.device_links is not None:
            self._reach.device_links.close(runner_id)

    async def _fetch(self, instance: Instance, runner_id: RunnerId) -> None:
        assert self._fetcher is not None
        try:
            await self._fetcher.fetch(instance, runner_id)
        except NoWeights as error:
            await self._give_up(instance.instance_id, runner_id, str(error))
        finally:
            self._fetcher.fetching.discard(runner_id)
            self.wake()

    async def _refuse(self, instance_id: InstanceId, runner_id: RunnerId, reason: str) -> None:
        logger.warning("refusing shard {} of instance {}: {}", runner_id, instance_id, reason)
        self._given_up.add(instance_id)
        await self._outbox.commands.send(RefusePlacement(
            command_id=new_command_id(), instance_id=instance_id, node_id=self._node_id,
            reason=reason))

    async def _on_runner_event(self, event: Event) -> None:
        await self._outbox.events.send(event)
        self.wake()

    async def _reap(self, runner_id: RunnerId) -> None:
        runner = self._runners.pop(runner_id)
        self._close_links(runner_id)
        if isinstance(runner.supervisor.status, RunnerFailed):
            self.runner_failures += 1
        instance = self._replica.state.instances.get(runner.instance_id)
        if instance is not None and runner.killed_for is not None:
            # A missed deadline: this node is the suspect, so the instance goes elsewhere;
            # but rank 0 of a split instance stalls when any rank does, so a stall blames
            # no node there (the stalled rank's own collective deadline ends it).
            blamed = None if runner.killed_running and len(instance.shards) > 1 \
                else self._node_id
            self._given_up.add(instance.instance_id)
            await self._outbox.commands.send(ReplaceInstance(
                command_id=new_command_id(), instance_id=instance.instance_id,
                reason=f"rank {instance.shards[runner_id].rank} on {self._node_id} was "
                       f"killed: {runner.killed_for}", failed_node=blamed))
            return
        if instance is not None and len(instance.shards) > 1:
            # The other ranks' ring is broken too: restarting this rank alone cannot join
            # it, so the whole instance is placed again with a fresh ring.
            status = runner.supervisor.status
            why = status.error if isinstance(status, RunnerFailed) else "runner exited"
            logger.error("rank {} of instance {} ended ({}); asking to place it again",
                         runner_id, instance.instance_id, why)
            self._given_up.add(instance.instance_id)
            await self._outbox.commands.send(ReplaceInstance(
                command_id=new_command_id(), instance_id=instance.instance_id,
                reason=f"rank {instance.shards[runner_id].rank} on {self._node_id} ended: "
                       f"{why}"))
            return
        window = self._crashes.setdefault(runner.instance_id, CrashWindow())
        if window.record(self._clock()):
            status = runner.supervisor.status
            why = status.error if isinstance(status, RunnerFailed) else "runner exited"
            await self._give_up(runner.instance_id, runner_id,
                                f"runner crashed 3 times within 60 s (last: {why})")

    async def _give_up(self, instance_id: InstanceId, runner_id: RunnerId, reason: str) -> None:
        logger.error("giving up instance {}: {}", instance_id, reason)
        self._given_up.add(instance_id)
        await self._outbox.events.send(
            RunnerStatusUpdated(runner_id=runner_id, status=RunnerFailed(error=reason)))
        await self._outbox.commands.send(
            DeleteInstance(command_id=new_command_id(), instance_id=instance_id,
                           reason=f"node {self._node_id} gave it up: {reason}"))
