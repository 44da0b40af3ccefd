"""A runner as the worker holds it: its supervisor (or a fake with the same face) and
what the worker asked of it."""

from collections.abc import Callable, Mapping
from typing import Protocol

from skulk.shared.types.ids import InstanceId, RunnerId, TaskId
from skulk.shared.types.runners import RunnerStatus
from skulk.shared.types.tasks import TextGenerationTask
from skulk.worker.plan import LifecycleRequest, LocalRunner
from skulk.worker.runner import messages
from skulk.worker.runner.deadlines import Progress, RunnerDeadlines, overdue, stalled
from skulk.worker.runner.flight_recorder import FlightRecorder


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
    def progress(self) -> Progress | None: ...
    @property
    def recorder(self) -> FlightRecorder: ...
    async def run(self) -> None: ...
    def send(self, message: messages.LifecycleMessage) -> None: ...
    def start_task(self, task: TextGenerationTask) -> None: ...
    def cancel_task(self, task_id: TaskId) -> None: ...
    async def shutdown(self) -> None: ...
    async def kill(self, reason: str) -> None: ...


SupervisorFactory = Callable[..., Supervisor]


class LocalRunnerHandle:
    def __init__(self, supervisor: Supervisor, instance_id: InstanceId, *,
                 started_at: float = 0.0, weights_bytes: int = 0) -> None:
        self.supervisor = supervisor
        self.instance_id = instance_id
        self.requested: LifecycleRequest | None = None
        self.cancelling: set[TaskId] = set()
        # For the deadlines: when the process started, when it was asked to load, what
        # it loads, and why it was killed (a missed deadline), if it was.
        self.started_at = started_at
        self.load_asked_at: float | None = None
        self.weights_bytes = weights_bytes
        self.killed_for: str | None = None
        self.killed_running = False  # killed with requests in flight (a stall)

    def view(self, runner_id: RunnerId, now: float, deadlines: RunnerDeadlines
             ) -> LocalRunner:
        """What `plan()` knows of this runner first-hand."""
        return LocalRunner(
            runner_id=runner_id, instance_id=self.instance_id,
            status=self.supervisor.status, exited=self.supervisor.exited,
            in_flight=frozenset(self.supervisor.in_flight),
            cancelling=frozenset(self.cancelling), requested=self.requested,
            overdue=overdue(self.supervisor.status, self.started_at, self.load_asked_at,
                            now, self.weights_bytes, deadlines)
            or stalled(self.supervisor.progress, now, deadlines),
            killed=self.killed_for is not None)
