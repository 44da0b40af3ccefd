"""The runner subprocess: load one shard, then serve tasks one at a time.

It talks to its supervisor only through two queues of typed messages, checks for
cancellation between tokens, and exits when its parent dies.
"""

import ctypes
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from multiprocessing.queues import Queue
from typing import Any

from skulk.shared.types.chunks import ErrorChunk, ErrorKind
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
from skulk.worker.engines.protocol import ContextOverflow, Engine, EngineConfig, InvalidRequest
from skulk.worker.engines.registry import create_engine
from skulk.worker.runner import messages

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
    def __init__(self, engine_name: str, config: EngineConfig, inbox: "Queue[Any]",
                 outbox: "Queue[Any]") -> None:
        self._engine_name = engine_name
        self._config = config
        self._inbox = inbox
        self._outbox = outbox
        self._engine: Engine | None = None
        self._queued: deque[TextGenerationTask] = deque()
        self._shutdown = False

    def serve(self) -> int:
        self._report(RunnerCreated())
        while not self._shutdown:
            if self._queued and self._engine is not None:
                self._run_task(self._queued.popleft())
                continue
            message = self._inbox.get()
            match message:
                case messages.LoadModel():
                    if not self._lifecycle(self._load, RunnerLoading(), RunnerLoaded()):
                        return 1
                case messages.WarmUp():
                    if not self._lifecycle(self._warm_up, RunnerWarmingUp(), RunnerReady()):
                        return 1
                case _:
                    self._handle_while_idle(message)
        return 0

    def _lifecycle(self, action: Any, before: RunnerStatus, after: RunnerStatus) -> bool:
        self._report(before)
        try:
            action()
        except Exception as error:  # a supervision boundary: any failure is reported
            self._report(RunnerFailed(error=f"{type(error).__name__}: {error}"))
            return False
        self._report(after)
        return True

    def _load(self) -> None:
        self._engine = create_engine(self._engine_name, self._config)
        self._engine.load()

    def _warm_up(self) -> None:
        assert self._engine is not None, "warm up before load"
        self._engine.warm_up()

    def _handle_while_idle(self, message: Any) -> None:
        match message:
            case messages.StartTask(task=task):
                self._queued.append(task)
            case messages.CancelTask(task_id=task_id):
                self._drop_queued(task_id)
            case messages.Shutdown():
                self._shutdown = True

    def _drop_queued(self, task_id: str) -> None:
        for task in list(self._queued):
            if task.task_id == task_id:
                self._queued.remove(task)
                self._send(messages.TaskEnded(task_id=task.task_id, status="cancelled"))

    def _run_task(self, task: TextGenerationTask) -> None:
        assert self._engine is not None
        self._send(messages.TaskAcknowledged(task_id=task.task_id))
        self._report(RunnerRunning())
        try:
            self._stream(task, self._engine)
        except ContextOverflow as error:
            self._fail(task, "context_length_exceeded", str(error))
        except InvalidRequest as error:
            self._fail(task, "invalid_request", str(error))
        except Exception as error:  # a supervision boundary: the request fails, we live on
            self._fail(task, "internal", f"{type(error).__name__}: {error}")
        if not self._shutdown:
            self._report(RunnerReady())

    def _stream(self, task: TextGenerationTask, engine: Engine) -> None:
        stream = engine.generate(task.params)
        try:
            for chunk in stream:
                self._send(messages.ChunkProduced(task_id=task.task_id,
                                                  command_id=task.command_id, chunk=chunk))
                if self._cancel_requested(task):
                    self._send(messages.TaskEnded(task_id=task.task_id, status="cancelled"))
                    return
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        self._send(messages.TaskEnded(task_id=task.task_id, status="complete"))

    def _cancel_requested(self, current: TextGenerationTask) -> bool:
        """Drain the inbox between tokens; True when `current` must stop."""
        while True:
            try:
                message = self._inbox.get_nowait()
            except queue.Empty:
                return False
            match message:
                case messages.CancelTask(task_id=task_id) if task_id == current.task_id:
                    return True
                case messages.Shutdown():
                    self._shutdown = True
                    return True
                case _:
                    self._handle_while_idle(message)

    def _fail(self, task: TextGenerationTask, kind: ErrorKind, message: str) -> None:
        self._send(messages.ChunkProduced(task_id=task.task_id, command_id=task.command_id,
                                          chunk=ErrorChunk(error_kind=kind, message=message)))
        self._send(messages.TaskEnded(task_id=task.task_id, status="failed", error=message))

    def _report(self, status: RunnerStatus) -> None:
        self._send(messages.StatusReport(status=status))

    def _send(self, message: Any) -> None:
        self._outbox.put(message)


def entrypoint(engine_name: str, config: EngineConfig, inbox: "Queue[Any]",
               outbox: "Queue[Any]", parent_pid: int) -> None:
    _install_parent_death_watch(parent_pid)
    # The supervisor stops us with a Shutdown message or SIGTERM; Ctrl-C in the terminal
    # reaches the whole process group, and the node decides, not the runner.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = Runner(engine_name, config, inbox, outbox).serve()
    outbox.close()
    outbox.join_thread()  # every message is flushed before we exit
    sys.exit(code)
