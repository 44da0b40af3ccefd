"""The parent side of one runner subprocess: spawn, forward, detect death, reap.

Every runner message becomes an event or a data-plane chunk. A terminal task status is
forwarded exactly once; an abnormal exit fails the runner and ends every in-flight
request with an error chunk, so no stream is left hanging.
"""

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from multiprocessing.process import BaseProcess

import anyio
from loguru import logger

from skulk.shared.types.chunks import Chunk, DataChunk, ErrorChunk
from skulk.shared.types.events import Event, RunnerStatusUpdated, TaskStatusUpdated
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId, TaskId
from skulk.shared.types.runners import (
    RunnerFailed,
    RunnerLoading,
    RunnerShutdown,
    RunnerStatus,
    RunnerWarmingUp,
)
from skulk.shared.types.tasks import TerminalTaskStatus, TextGenerationTask
from skulk.shared.types.traces import RankSpans, Span
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.chunk_envelopes import ChunkEnvelopes
from skulk.worker.runner.coalesce import coalesce, plain_token_chunk
from skulk.worker.runner.deadlines import Progress
from skulk.worker.runner.direct_streams import DirectStreams, RunnerRelay
from skulk.worker.runner.flight_recorder import FlightRecorder
from skulk.worker.runner.messages import FromRunner
from skulk.worker.runner.runner_inbox import InboxWriter
from skulk.worker.runner.runner_output import RunnerOutput
from skulk.worker.runner.runner_spawn import spawn_runner
from skulk.worker.runner.runner_stdout import RunnerStdout

_POLL_SECONDS = 0.2
Outgoing = DataChunk | messages.StatusReport | messages.TaskAcknowledged | messages.TaskEnded
"""What the pipe's read callback leaves for the supervisor's task to send."""
_NO_NODE = NodeId("")
JOIN_SECONDS = 5.0


@contextlib.contextmanager
def _unheard_while_stopping(what: str) -> Iterator[None]:
    """A report made while stopping that nobody may hear (the node may be closing its
    transport already) must not stop the rest of the shutdown."""
    try:
        yield
    except Exception as error:
        logger.debug("could not report {} while stopping: {}", what, error)


class RunnerSupervisor:
    def __init__(
        self,
        *,
        runner_id: RunnerId,
        instance_id: InstanceId,
        engine: EngineDescription,
        config: EngineConfig,
        on_event: Callable[[Event], Awaitable[None]],
        on_chunk: Callable[[DataChunk], Awaitable[None]],
        on_spans: Callable[[RankSpans], Awaitable[None]] | None = None,
        on_chunk_now: Callable[[DataChunk], bool] | None = None,
        node_id: NodeId = _NO_NODE,
        direct_streams: DirectStreams | None = None,
    ) -> None:
        self.runner_id = runner_id
        self.node_id = node_id
        self.instance_id = instance_id
        self._engine = engine
        self._config = config
        self._on_event = on_event
        self._on_chunk = on_chunk
        self._on_spans = on_spans
        # Hands a chunk over without waiting where it can (a stream on this node): False
        # leaves it for `on_chunk`.
        self._on_chunk_now = on_chunk_now
        # With the node's direct streams, a relay thread reads the runner's pipe and
        # writes their tokens itself.
        self._direct_streams = direct_streams
        self._relay: RunnerRelay | None = None
        self._status: RunnerStatus | None = None
        self._in_flight: dict[TaskId, TextGenerationTask] = {}
        self._envelopes = ChunkEnvelopes(node_id, config.rank)
        self._process: BaseProcess | None = None
        self._inbox: InboxWriter | None = None
        self._stopping = False
        self._exited = False
        self.recorder = FlightRecorder()
        self._heard_at = 0.0  # monotonic: the runner's last message
        self._busy_since = 0.0  # monotonic: its first request in flight was handed over

    @property
    def status(self) -> RunnerStatus | None:
        return self._status

    @property
    def tokens_per_second(self) -> float | None:
        return self._envelopes.tokens_per_second

    @property
    def in_flight(self) -> Mapping[TaskId, TextGenerationTask]:
        return dict(self._in_flight)

    @property
    def progress(self) -> Progress | None:
        """For the running-request deadlines: rank 0 only (other ranks send no chunks)."""
        if self._config.rank != 0 or not self._in_flight:
            return None
        heard_at = self._heard_at if self._relay is None else max(
            self._heard_at, self._relay.relay.heard_at())
        return Progress(quiet_since=max(heard_at, self._busy_since),
                        produced=any(self._envelopes.produced(t) for t in self._in_flight))

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def exited(self) -> bool:
        """The process ended on its own (not through `shutdown`) and was handled."""
        return self._exited

    async def run(self) -> None:
        if self._stopping:
            # Shut down before this task first ran (the worker starts it with start_soon
            # and its instance may be deleted at once): a process spawned now would have
            # nobody to stop it but the node's own exit.
            self.recorder.record("shutdown", "before it was spawned")
            return
        spawned = spawn_runner(self._engine, self._config, self.runner_id)
        self._process = spawned.process
        self._inbox = InboxWriter(spawned.inbox)
        output = RunnerOutput(spawned.output, self._at_once,
                              relay=self._direct_streams is not None)
        if output.relay is not None and self._direct_streams is not None:
            self._relay = RunnerRelay(output.relay, self._direct_streams,
                                      self._first_token_out)
        printed = RunnerStdout(spawned.stdout, str(self.runner_id))
        self.recorder.record("spawned", f"pid {self._process.pid}, engine {self._engine.name}")
        logger.info("runner {} started (pid {}, engine {})", self.runner_id,
                    self._process.pid, self._engine.name)
        try:
            while not output.ended:
                left = await output.take(_POLL_SECONDS)
                await self._forward_left(left)
                if not left and not output.ended and not self._process.is_alive():
                    # Exited with its pipe still open elsewhere (a child of its own).
                    await self._forward_left(await output.take(0))
                    break
        finally:
            output.close()
            printed.close()
            self._inbox.close()
        if output.torn:
            logger.warning("runner {} died while writing a message", self.runner_id)
        bad_frame = output.bad_frame
        if bad_frame is not None:  # nothing it says can be trusted any more
            self._process.kill()
        await self._reaped(self._process)
        if not self._stopping:
            await self._handle_death(self._process.exitcode, bad_frame)

    @staticmethod
    async def _reaped(process: BaseProcess) -> None:
        """Wait for the exit code: the pipe closes as the process ends, an instant before
        it can be reaped. A runner that closed its pipe but lingers is killed."""
        deadline = time.monotonic() + JOIN_SECONDS
        while process.exitcode is None:
            if time.monotonic() > deadline:
                process.kill()
                await anyio.to_thread.run_sync(process.join, JOIN_SECONDS)
                return
            await anyio.sleep(0.01)

    def send(self, message: messages.LifecycleMessage) -> None:
        if self._inbox is not None:
            self._inbox.send(message)

    def start_task(self, task: TextGenerationTask) -> None:
        self.recorder.record("task_started", task.task_id)
        self._envelopes.started(task)
        if not self._in_flight:
            self._busy_since = time.monotonic()
        self._in_flight[task.task_id] = task  # before sending: its chunks may come at once
        relay = self._relay if self._config.rank == 0 and task.owner_node == self.node_id \
            else None  # the relay, when the task's stream is on this node
        if relay is not None:
            relay.offer(task.task_id)
        if self._inbox is not None:
            self._inbox.send(messages.StartTaskRequest(task=task,
                                                       first_token_ack=relay is not None))

    def _first_token_out(self, task_id: TaskId) -> None:
        self.recorder.record("first_token_out", task_id)
        if self._inbox is not None:
            self._inbox.send(messages.FirstTokenOut(task_id=task_id))

    def cancel_task(self, task_id: TaskId) -> None:
        self.recorder.record("task_cancel_requested", task_id)
        if self._inbox is not None:
            self._inbox.send(messages.CancelTaskRequest(task_id=task_id))

    async def _forward_batch(self, batch: list[FromRunner]) -> None:
        """One read's messages forwarded whole, as `run` forwards them (`_at_once`, then
        what it left)."""
        await self._forward_left(self._at_once(batch))

    def _at_once(self, batch: list[FromRunner]) -> list[Outgoing]:
        """What one read brought, chunks first, handled in the pipe's read callback: a
        chunk for a request taken on this node goes to its stream here (`on_chunk_now`),
        with no task woken; the rest is left for `run`, in order: chunks that travel,
        then the events. A request's first token comes in the runner step that
        acknowledged it, and publishing the "running" status before it made the token
        wait while the master indexed it (0.5-5 ms of time to first token). The events
        go out in the runner's order, a task's end after its chunks."""
        self._heard_at = time.monotonic()
        if self._relay is not None:
            self._relay.count(batch)
        if len(batch) == 1 and type(batch[0]) is messages.TokensProduced \
                and len(batch[0].pieces) == 1:
            return self._step_token_at_once(batch[0].pieces[0])  # one stream's token
        messages_in_order = coalesce(batch)
        left: list[Outgoing] = []
        for message in messages_in_order:
            match message:
                case messages.TaskAcknowledged(task_id=task_id):
                    self._envelopes.acknowledged(task_id)  # before its first chunk's time
                case messages.ChunkProduced(task_id=task_id, chunk=chunk) \
                        if self._config.rank == 0:  # rank 0 speaks for a split instance
                    envelope = self._envelope(task_id, chunk)
                    if envelope is not None and not self._handed_over_now(envelope):
                        left.append(envelope)
        left += [message for message in messages_in_order if isinstance(
            message, messages.StatusReport | messages.TaskAcknowledged | messages.TaskEnded)]
        return left

    def _step_token_at_once(self, piece: messages.TokenPiece) -> list[Outgoing]:
        """A read that is one plain piece of one request and nothing else (`coalesce`
        would leave it as it is): straight into its envelope, with no message built for
        it. Every call here runs once per token on a node woken with cold caches, where
        each costs a microsecond or two."""
        task_id, _, text, token_ids = piece
        task = self._in_flight.get(task_id)
        if task is None or self._config.rank != 0:
            return []
        envelope = self._envelopes.envelope(task, plain_token_chunk(text, token_ids))
        return [] if self._handed_over_now(envelope) else [envelope]

    def _handed_over_now(self, envelope: DataChunk) -> bool:
        return self._on_chunk_now is not None and self._on_chunk_now(envelope)

    async def _forward_left(self, left: list[Outgoing]) -> None:
        for item in left:
            if isinstance(item, DataChunk):
                await self._on_chunk(item)
            else:
                await self._forward_event(item)

    async def _forward_event(self, message: FromRunner) -> None:
        match message:
            case messages.StatusReport(status=status):
                self.recorder.record("status", status.kind)
                self._status = status
                await self._on_event(RunnerStatusUpdated(runner_id=self.runner_id, status=status))
            case messages.TaskAcknowledged(task_id=task_id):
                if task_id in self._in_flight:
                    await self._on_event(TaskStatusUpdated(task_id=task_id, status="running"))
            case messages.TaskEnded(task_id=task_id, status=status, error=error, spans=spans):
                await self._send_rank_spans(task_id, spans)
                await self._end_task(task_id, status, error)

    async def _emit_chunk(self, task_id: TaskId, chunk: Chunk) -> None:
        envelope = self._envelope(task_id, chunk)
        if envelope is not None and not self._handed_over_now(envelope):
            await self._on_chunk(envelope)

    def _envelope(self, task_id: TaskId, chunk: Chunk) -> DataChunk | None:
        """The chunk's data-plane envelope (None: the task already ended; a late chunk
        must not follow its terminal one)."""
        task = self._in_flight.get(task_id)
        if task is None:
            return None
        if self._relay is not None:
            self._envelopes.relayed(task_id, self._relay.relay.take_relayed(task_id))
        return self._envelopes.envelope(task, chunk)

    async def _send_rank_spans(self, task_id: TaskId, engine_spans: list[Span]) -> None:
        """A traced task's spans that no chunk carries (`ChunkEnvelopes.rank_spans`)."""
        task = self._in_flight.get(task_id)
        if task is None or self._on_spans is None:
            return
        spans = self._envelopes.rank_spans(task_id, engine_spans)
        if spans:
            await self._on_spans(RankSpans(command_id=task.command_id,
                                           owner_node=task.owner_node, spans=spans))

    async def _end_task(self, task_id: TaskId, status: TerminalTaskStatus,
                        error: str | None) -> None:
        # Popping first makes the terminal status go out once, whoever calls second.
        if self._in_flight.pop(task_id, None) is None:
            return
        self._envelopes.forget(task_id)
        if self._relay is not None:
            self._relay.ended(task_id)
        self.recorder.record("task_ended", f"{task_id} {status}" + (f": {error}" if error else ""))
        await self._on_event(TaskStatusUpdated(task_id=task_id, status=status, error=error))

    async def _handle_death(self, exitcode: int | None, bad_frame: str | None = None) -> None:
        reason = f"runner process exited with code {exitcode}" if bad_frame is None else \
            f"runner process killed after a bad message: {bad_frame}"
        self.recorder.record("died", reason)
        logger.error("runner {} died: {}", self.runner_id, reason)
        if not isinstance(self._status, RunnerFailed):
            self._status = RunnerFailed(error=reason)
            await self._on_event(RunnerStatusUpdated(runner_id=self.runner_id,
                                                     status=self._status))
        for task_id in list(self._in_flight):
            # Another rank's chunks would clash with rank 0's sequence numbers; its failed
            # task status ends the stream instead.
            if self._config.rank != 0:
                await self._end_task(task_id, "failed", reason)
                continue
            await self._emit_chunk(task_id, ErrorChunk(
                error_kind="runner_failed",
                message=f"the model's runner died mid-request ({reason}); retry the request"))
            await self._end_task(task_id, "failed", reason)
        self._exited = True

    async def kill(self, reason: str) -> None:
        """SIGKILL a runner that missed a deadline (a stopped or wedged process answers
        nothing else); its death is then handled as any other, with `reason` as status."""
        self.recorder.record("killed", reason)
        logger.error("killing runner {}: {}", self.runner_id, reason)
        self._status = RunnerFailed(error=reason)
        await self._on_event(RunnerStatusUpdated(runner_id=self.runner_id, status=self._status))
        if self._process is not None and self._process.is_alive():
            self._process.kill()

    def _reads_messages(self) -> bool:
        """Whether the runner would hear a polite request to stop: not while it is still
        starting (no status yet) or inside a load or warm-up, which read no messages and
        have nothing to tidy; asking those would only hold the worker for `timeout`."""
        return self._status is not None and not isinstance(
            self._status, RunnerLoading | RunnerWarmingUp)

    async def shutdown(self, timeout: float = JOIN_SECONDS) -> None:
        """Stop the runner: ask (when it can hear), then SIGTERM, then SIGKILL; always reaps
        the process."""
        with anyio.CancelScope(shield=True):
            self._stopping = True
            process = self._process
            if process is None:
                return
            asked = process.is_alive() and self._reads_messages()
            if asked:
                self.recorder.record("shutdown", "asked to stop")
                self.send(messages.ShutdownRequest())
                await anyio.to_thread.run_sync(process.join, timeout)
            if process.is_alive():
                if asked:
                    logger.warning("runner {} ignored shutdown; sending SIGTERM", self.runner_id)
                else:
                    logger.info("runner {} cannot read messages yet ({}); sending SIGTERM",
                                self.runner_id, self._status.kind if self._status else "starting")
                self.recorder.record("shutdown", "SIGTERM")
                process.terminate()
                await anyio.to_thread.run_sync(process.join, timeout)
            if process.is_alive():
                logger.warning("runner {} ignored SIGTERM; sending SIGKILL", self.runner_id)
                self.recorder.record("shutdown", "SIGKILL")
                process.kill()
                await anyio.to_thread.run_sync(process.join, timeout)
            for task_id in list(self._in_flight):
                with _unheard_while_stopping("a task's end"):
                    await self._end_task(task_id, "cancelled", "the runner was shut down")
            with _unheard_while_stopping("the runner's shutdown"):
                await self._on_event(RunnerStatusUpdated(runner_id=self.runner_id,
                                                         status=RunnerShutdown()))
