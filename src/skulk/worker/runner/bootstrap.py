"""The runner subprocess: load one shard, then serve tasks.

The engine takes every task as it comes and is stepped while it has work, the inbox
drained between steps without blocking (tasks that come before the engine is loaded wait
for it). The runner talks to its supervisor only through two pipes of typed messages,
checks for cancellation between steps, and exits when its parent dies.
"""

import ctypes
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection

from skulk.shared.types.chunks import ErrorChunk, ErrorKind, TokenChunk
from skulk.shared.types.ids import TaskId
from skulk.shared.types.runners import (
    RunnerCreated,
    RunnerFailed,
    RunnerLoaded,
    RunnerLoading,
    RunnerReady,
    RunnerRunning,
    RunnerStatus,
    RunnerWarmingUp,
)
from skulk.shared.types.tasks import TextGenerationTask
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.protocol import (
    Engine,
    EngineConfig,
    EngineEvent,
    PipelineCorrupt,
    TaskDone,
    TaskJoined,
    TaskOutput,
)
from skulk.worker.runner import messages
from skulk.worker.runner.coalesce import packable
from skulk.worker.runner.first_token_pause import (
    MOST_SECONDS,
    FirstTokenPause,
    compute_fills_cores,
)
from skulk.worker.runner.messages import FromRunner, ToRunner
from skulk.worker.runner.pipe_frames import FrameWriter
from skulk.worker.runner.ready_report import ReadyReport
from skulk.worker.runner.runner_inbox import RunnerInbox
from skulk.worker.runner.runner_stdout import point_stdout_at

_PR_SET_PDEATHSIG = 1
_PARENT_POLL_SECONDS = 0.5


def _install_parent_death_watch(parent_pid: int) -> None:
    """Exit when the parent dies: the kernel's signal where available, and a poll."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the poll below still covers it

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(_PARENT_POLL_SECONDS)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class Runner:
    def __init__(self, engine: EngineDescription, config: EngineConfig,
                 inbox: RunnerInbox,
                 outbox: FrameWriter[FromRunner]) -> None:
        self._description = engine
        self._config = config
        self._inbox = inbox
        self._outbox = outbox
        self._engine: Engine | None = None
        self._queued: deque[messages.StartTaskRequest] = deque()  # came before the engine
        self._submitted: dict[TaskId, TextGenerationTask] = {}  # not yet ended
        self._last_step = 0.0
        self._step_tokens: list[messages.TokenPiece] = []  # this step's plain output
        self._shutdown = False
        self._ready = ReadyReport()  # when to say `running` and `ready` again
        self._exit_code = 0
        self._first_tokens = FirstTokenPause(compute_fills_cores(config.n_threads))

    def serve(self) -> int:
        self._report(RunnerCreated())
        while not self._shutdown:
            if self._ready.due(time.monotonic()):
                self._report(RunnerReady())
            if self._engine is not None and self._step_due(self._engine):
                self._drain_inbox()
                if not self._shutdown:
                    self._step(self._engine)
                continue
            try:
                message = self._inbox.get(timeout=self._idle_wait())
            except queue.Empty:
                continue
            self._dispatch(message)
        return self._exit_code

    def _dispatch(self, message: ToRunner) -> None:
        match message:
            case messages.LoadModelRequest():
                loaded = self._lifecycle(self._load, RunnerLoading(), RunnerLoaded())
            case messages.WarmUpRequest():
                loaded = self._lifecycle(self._warm_up, RunnerWarmingUp(), RunnerReady())
            case _:
                self._handle_while_idle(message)
                return
        if not loaded:
            self._shutdown, self._exit_code = True, 1

    def _lifecycle(self, action: Callable[[], None], before: RunnerStatus,
                   after: RunnerStatus) -> bool:
        self._report(before)
        try:
            action()
        except Exception as error:  # a supervision boundary: any failure is reported
            self._report(RunnerFailed(error=f"{type(error).__name__}: {error}"))
            return False
        self._report(after)
        return True

    def _load(self) -> None:
        engine = self._description.create(self._config)
        engine.load()
        self._engine = engine
        while self._queued:  # tasks that came before the engine: it takes them now
            self._handle_while_idle(self._queued.popleft())

    def _warm_up(self) -> None:
        assert self._engine is not None, "warm up before load"
        self._engine.warm_up()

    def _handle_while_idle(self, message: ToRunner) -> None:
        match message:
            case messages.StartTaskRequest(task=task) if self._engine is not None:
                self._submitted[task.task_id] = task
                if message.first_token_ack:
                    self._first_tokens.expect(task.task_id)
                self._engine.submit(task.task_id, task.params)
            case messages.StartTaskRequest():
                self._queued.append(message)
            case messages.FirstTokenOut(task_id=task_id):
                self._first_tokens.acknowledged(task_id)
            case messages.CancelTaskRequest(task_id=task_id) if self._engine is not None:
                self._engine.cancel(task_id)
            case messages.CancelTaskRequest(task_id=task_id):
                self._drop_queued(task_id)
            case messages.ShutdownRequest():
                self._shutdown = True
            case messages.RevokedNodes(nodes=nodes):
                # only a split's runners have links: the native channel is loaded then
                from skulk.worker import rpc_channel
                rpc_channel.set_revoked(frozenset(nodes))

    def _idle_wait(self) -> float | None:
        """How long to block on the inbox: forever, unless the engine wants idle steps or
        `RunnerReady` falls due."""
        now = time.monotonic()
        ready = self._ready.wait(now)
        if self._engine is None or self._engine.idle_step_seconds is None:
            return ready
        step = max(self._engine.idle_step_seconds - (now - self._last_step), 0.001)
        return step if ready is None else min(step, ready)

    def _step_due(self, engine: Engine) -> bool:
        """Step while there is work; a split engine also steps now and then when idle, so
        its ranks keep meeting (to agree on requests only some of them hold)."""
        if engine.has_work:
            return True
        every = engine.idle_step_seconds
        return every is not None and time.monotonic() - self._last_step >= every

    def _drain_inbox(self) -> None:
        """Everything waiting, without blocking: a split engine steps even before its
        warm-up (its peers may be warming up), so lifecycle messages come this way too."""
        while not self._shutdown:
            try:
                message = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._dispatch(message)

    def _step(self, engine: Engine) -> None:
        self._last_step = time.monotonic()
        was_busy = bool(self._submitted)
        self._outbox.hold()  # the step's messages go out together, before the next step
        try:
            self._step_and_forward(engine, was_busy)
        finally:
            self._send_step_tokens()
            self._outbox.flush()
        if self._first_tokens.awaiting:
            self._await_first_tokens()

    def _await_first_tokens(self) -> None:
        """Until the node says this step's first tokens went out (`first_token_pause`),
        or `MOST_SECONDS`; what else comes meanwhile is handled as between steps."""
        deadline = time.monotonic() + MOST_SECONDS
        while self._first_tokens.awaiting and not self._shutdown:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                message = self._inbox.get(timeout=left)
            except queue.Empty:
                break
            self._dispatch(message)
        self._first_tokens.give_up()

    def _step_and_forward(self, engine: Engine, was_busy: bool) -> None:
        try:
            events = engine.step()
        except PipelineCorrupt as error:  # every rank raised it in this step
            for task in list(self._submitted.values()):
                self._fail(task, "pipeline_corrupt", str(error))
            self._submitted.clear()
            self._report(RunnerFailed(error=f"pipeline_corrupt: {error}"))
            self._shutdown, self._exit_code = True, 1
            return
        except Exception as error:  # a supervision boundary: the batch state is lost
            self._report(RunnerFailed(error=f"{type(error).__name__}: {error}"))
            self._shutdown, self._exit_code = True, 1
            return
        for event in events:
            self._forward(event)
        if was_busy and not self._submitted and not self._shutdown:
            self._ready.drained(time.monotonic())  # `ready` if none comes for a moment

    def _forward(self, event: EngineEvent) -> None:
        task = self._submitted.get(event.task_id)
        if task is None:
            return  # the engine's own request (a warm-up)
        if type(event) is TaskOutput:
            self._first_tokens.produced(task.task_id)
        match event:
            case TaskJoined():
                self._send(messages.TaskAcknowledged(task_id=task.task_id))
                if self._ready.joined():  # a request joining others changes nothing
                    self._report(RunnerRunning())  # (each report is an event indexed)
            case TaskOutput(chunk=TokenChunk() as chunk) if packable(chunk):
                self._step_tokens.append((task.task_id, task.command_id, chunk.text,
                                          chunk.token_ids))
            case TaskOutput(chunk=chunk):
                self._send(messages.ChunkProduced(task_id=task.task_id,
                                                  command_id=task.command_id, chunk=chunk))
            case TaskDone(status=status, error=error, spans=spans):
                del self._submitted[task.task_id]
                self._first_tokens.ended(task.task_id)
                self._send(messages.TaskEnded(
                    task_id=task.task_id, status=status, error=error,
                    spans=list(spans) if task.params.trace else []))

    def _drop_queued(self, task_id: TaskId) -> None:
        for request in list(self._queued):
            if request.task.task_id == task_id:
                self._queued.remove(request)
                self._send(messages.TaskEnded(task_id=task_id, status="cancelled"))

    def _fail(self, task: TextGenerationTask, kind: ErrorKind, message: str) -> None:
        self._send(messages.ChunkProduced(task_id=task.task_id, command_id=task.command_id,
                                          chunk=ErrorChunk(error_kind=kind, message=message)))
        self._send(messages.TaskEnded(task_id=task.task_id, status="failed", error=message))

    def _report(self, status: RunnerStatus) -> None:
        self._send(messages.StatusReport(status=status))

    def _send(self, message: FromRunner) -> None:
        self._send_step_tokens()  # what came before this message goes before it
        self._outbox.send(message)

    def _send_step_tokens(self) -> None:
        if self._step_tokens:
            pieces, self._step_tokens = self._step_tokens, []
            # Built from the engine's checked chunks: not validated again, once per step.
            self._outbox.send(messages.tokens_produced(pieces))


def entrypoint(engine: EngineDescription, config: EngineConfig, inbox: Connection,
               outbox: Connection, parent_pid: int, stdout: Connection | None = None) -> None:
    """`inbox`: the read end of the pipe from the supervisor (runner_inbox). `outbox`: the
    write end of the pipe to the supervisor (written as pipe_frames; every message is out
    when `_send` returns, so nothing is left to flush at exit). `stdout`: the write end of
    the pipe the supervisor logs this process's standard output from."""
    _install_parent_death_watch(parent_pid)
    if stdout is not None:
        point_stdout_at(os.dup(stdout.fileno()))
        stdout.close()
    # The supervisor stops us with a Shutdown message or SIGTERM; Ctrl-C in the terminal
    # reaches the whole process group, and the node decides, not the runner.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    writer: FrameWriter[FromRunner] = FrameWriter(outbox.fileno(), messages.TOKENS_PLAIN)
    code = Runner(engine, config, RunnerInbox(inbox.fileno()), writer).serve()
    sys.exit(code)
