"""The worker loop: ask `plan()` for the next step, carry it out, report what happened."""

import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import TaskGroup
from loguru import logger

from skulk.models.catalog import ModelCatalog
from skulk.models.mlx_import import ensure_mlx_model
from skulk.shared.replica import StateReplica
from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import (
    Command,
    DeleteInstance,
    RefusePlacement,
    ReplaceInstance,
)
from skulk.shared.types.events import Event, RunnerStatusUpdated, StateSnapshotHydrated
from skulk.shared.types.ids import (
    InstanceId,
    NodeId,
    RunnerId,
    SessionId,
    TaskId,
    new_command_id,
)
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.runners import RunnerFailed, RunnerStatus, is_serving
from skulk.shared.types.tasks import TextGenerationTask
from skulk.shared.types.telemetry import NodeTelemetry, WarmModel
from skulk.shared.types.traces import RankSpans
from skulk.worker.engines.description import EngineDescription, EngineOptionError
from skulk.worker.engines.node_options import NodeEngineOptions
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.engines.registry import engine_description
from skulk.worker.fit_guard import refusal
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
    Step,
    WarmUp,
    plan,
)
from skulk.worker.runner import messages
from skulk.worker.runner.crash_window import CrashWindow
from skulk.worker.runner.flight_recorder import FlightRecorder
from skulk.worker.runner.supervisor import RunnerSupervisor
from skulk.worker.weights_digest import weights_digest
from skulk.worker.weights_fetch import (
    NoWeights,
    SourcesFor,
    WeightsFetcher,
    loadable_weights,
    stage_layers,
)


class Supervisor(Protocol):
    """The parts of `RunnerSupervisor` the worker uses (fakes implement this in tests)."""

    @property
    def status(self) -> RunnerStatus | None: ...
    @property
    def exited(self) -> bool: ...
    @property
    def in_flight(self) -> Mapping[TaskId, TextGenerationTask]: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def tokens_per_second(self) -> float | None: ...
    @property
    def recorder(self) -> FlightRecorder: ...
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
        read_own: Callable[[], NodeTelemetry] | None = None,
        batching: bool = True,
        publish_spans: Callable[[RankSpans], Awaitable[None]] | None = None,
        remote_drafting: Callable[[NodeId], Awaitable[dict[str, str]]] | None = None,
        weight_sources: SourcesFor | None = None,
        node_engine_options: NodeEngineOptions | None = None,
    ) -> None:
        self._node_id = node_id
        self._replica = replica
        self._catalog = catalog
        self._publish_event = publish_event
        self._publish_chunk = publish_chunk
        self._publish_spans = publish_spans
        self._send_command = send_command
        self._supervisor_factory = supervisor_factory
        self._engine_threads = engine_threads
        self._clock = clock
        # Fresh readings of this node for the fit guard; None skips the guard.
        self._read_own = read_own
        self._batching = batching
        # The operator's `--engine-option`s, by engine: over the card's, under the master's.
        self._node_engine_options = node_engine_options or {}
        # Engine options that let a runner reach a drafting node (None: no remote drafts).
        self._remote_drafting = remote_drafting
        # Where missing weights come from (None: a rank without its weights gives up).
        self._fetcher = None if weight_sources is None else WeightsFetcher(
            node_id=node_id, catalog=catalog, publish_event=publish_event,
            sources_for=weight_sources)
        self._runners: dict[RunnerId, _Runner] = {}
        self._dispatched: set[TaskId] = set()
        self._given_up: set[InstanceId] = set()
        self._crashes: dict[InstanceId, CrashWindow] = {}
        self.runner_failures = 0
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

    def runner_pid(self, runner_id: RunnerId) -> int | None:
        runner = self._runners.get(runner_id)
        return None if runner is None else runner.supervisor.pid

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
            fetcher = self._fetcher
            step = plan(self._node_id, state, self.local_runners(), self._given_up,
                        self._dispatched,
                        missing_weights=(fetcher.missing(state, self._given_up)
                                         if fetcher else frozenset()),
                        fetching=fetcher.fetching if fetcher else frozenset())
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
            case FetchWeights(instance_id, runner_id):
                assert self._fetcher is not None  # plan() asks only when it is set
                self._fetcher.fetching.add(runner_id)
                tasks.start_soon(self._fetch, self._replica.state.instances[instance_id],
                                 runner_id)
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
        engine = engine_description(instance.engine)
        shard = instance.shards[runner_id]
        if card is not None and self._read_own is not None:
            why = refusal(card, instance, shard, self._read_own())
            if why is not None:
                await self._refuse(instance.instance_id, runner_id, why)
                return
        path = None if card is None else await loadable_weights(
            self._catalog, card, engine, stage_layers(instance, shard))
        if path is None:
            await self._give_up(instance.instance_id, runner_id,
                                f"weights of {instance.model_id} for {instance.engine} are not "
                                f"on node {self._node_id}")
            return
        config = EngineConfig(model_path=str(path),
                              context_token_limit=instance.context_token_limit,
                              n_threads=self._engine_threads, start_layer=shard.start_layer,
                              end_layer=shard.end_layer, world_size=shard.world_size,
                              rank=shard.rank,
                              options={**await self._drafting_options(card, instance, engine),
                                       **self._node_engine_options.get(instance.engine, {}),
                                       **engine_options(instance, batching=self._batching),
                                       **shard_options(shard),
                                       **await _agreement_options(instance, path)})
        try:
            engine.options.parse(config.options)
        except EngineOptionError as error:
            await self._give_up(instance.instance_id, runner_id, str(error))
            return
        supervisor = self._supervisor_factory(
            runner_id=runner_id, instance_id=instance.instance_id, node_id=self._node_id,
            engine_name=instance.engine, config=config,
            on_event=self._on_runner_event, on_chunk=self._publish_chunk,
            on_spans=self._publish_spans)
        self._runners[runner_id] = _Runner(supervisor, instance.instance_id)
        tasks.start_soon(supervisor.run)

    async def _fetch(self, instance: Instance, runner_id: RunnerId) -> None:
        assert self._fetcher is not None
        try:
            await self._fetcher.fetch(instance, runner_id)
        except NoWeights as error:
            await self._give_up(instance.instance_id, runner_id, str(error))
        finally:
            self._fetcher.fetching.discard(runner_id)
            self.wake()

    async def _drafting_options(self, card: ModelCard | None, instance: Instance,
                                engine: EngineDescription) -> dict[str, str]:
        """Speculative decoding options from the model card: the default drafter, the
        quantized copy that drafts for the model (imported on first use) and, when the
        master placed one, how to reach the remote drafting node."""
        if card is None or not engine.drafts:
            return {}
        options: dict[str, str] = {"drafter": card.drafters[0] if card.drafters else "none"}
        if "draft_model" in card.drafters and card.draft_model_q_bits is not None:
            try:
                draft: Path = await anyio.to_thread.run_sync(
                    lambda: ensure_mlx_model(self._catalog, card, q_bits=card.draft_model_q_bits))
                options["draft_model_path"] = str(draft)
            except (OSError, ValueError) as error:
                logger.warning("no draft model for {}: {}", card.model_id, error)
        if instance.drafter_node is not None and self._remote_drafting is not None:
            options.update(await self._remote_drafting(instance.drafter_node))
        return options

    async def _refuse(self, instance_id: InstanceId, runner_id: RunnerId, reason: str) -> None:
        logger.warning("refusing shard {} of instance {}: {}", runner_id, instance_id, reason)
        self._given_up.add(instance_id)
        await self._send_command(RefusePlacement(
            command_id=new_command_id(), instance_id=instance_id, node_id=self._node_id,
            reason=reason))

    async def _on_runner_event(self, event: Event) -> None:
        await self._publish_event(event)
        self.wake()

    async def _reap(self, runner_id: RunnerId) -> None:
        runner = self._runners.pop(runner_id)
        if isinstance(runner.supervisor.status, RunnerFailed):
            self.runner_failures += 1
        instance = self._replica.state.instances.get(runner.instance_id)
        if instance is not None and len(instance.shards) > 1:
            # The other ranks' ring is broken too: restarting this rank alone cannot join
            # it, so the whole instance is placed again with a fresh ring.
            status = runner.supervisor.status
            why = status.error if isinstance(status, RunnerFailed) else "runner exited"
            logger.error("rank {} of instance {} ended ({}); asking to place it again",
                         runner_id, instance.instance_id, why)
            self._given_up.add(instance.instance_id)
            await self._send_command(ReplaceInstance(
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
        await self._publish_event(
            RunnerStatusUpdated(runner_id=runner_id, status=RunnerFailed(error=reason)))
        await self._send_command(
            DeleteInstance(command_id=new_command_id(), instance_id=instance_id))


async def _agreement_options(instance: Instance, path: Path) -> dict[str, str]:
    """The digest of the weights a rank of a split instance loads: its ranks check they
    agree before serving (a whole instance has nobody to disagree with)."""
    if len(instance.shards) < 2:
        return {}
    digest = await anyio.to_thread.run_sync(weights_digest, path)
    return {} if digest is None else {"weights_sha256": digest}


def engine_options(instance: Instance, batching: bool = True) -> dict[str, str]:
    """What every rank's engine must agree on beyond its own shard: how the model is split
    and where each rank of the ring listens (stamped by the master); and this node's choice
    of batching concurrent requests, for instances wholly on this node only: every rank of
    a split instance must run the same batch shape, whatever each node's flag says."""
    options = {} if batching or len(instance.shards) > 1 else {"batching": "off"}
    if instance.ring_port is None:
        return options
    ranks = sorted(instance.shards.values(), key=lambda s: s.rank)
    hosts = [f"{shard.ring_host or '127.0.0.1'}:{instance.ring_port + shard.rank}"
             for shard in ranks]
    return {**options, "sharding": instance.sharding, "ring_hosts": ",".join(hosts)}


def shard_options(shard: ShardAssignment) -> dict[str, str]:
    """What the master decided for this rank alone: the layers its engine offloads to
    the GPU (stamped only for engines that offload, so others never see the option)."""
    return {"gpu_layers": str(shard.gpu_layers)} if shard.gpu_layers else {}
