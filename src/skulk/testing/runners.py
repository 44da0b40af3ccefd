"""Real runner subprocesses under their supervisor, for tests: one started, loaded and
warmed up, and a recorder of everything it reports."""

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.events import Event, RunnerStatusUpdated, TaskStatusUpdated
from skulk.shared.types.ids import InstanceId, RunnerId
from skulk.shared.types.runners import RunnerReady
from skulk.testing.echo.description import ECHO, EchoOptions
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.supervisor import RunnerSupervisor

RUNNER = RunnerId("run-1")
INSTANCE = InstanceId("inst-1")


class Recorder:
    """Keeps every event and chunk a supervisor reports, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.chunks: list[DataChunk] = []

    async def on_event(self, event: Event) -> None:
        self.events.append(event)

    async def on_chunk(self, chunk: DataChunk) -> None:
        self.chunks.append(chunk)

    def task_statuses(self, task_id: str) -> list[str]:
        return [e.status for e in self.events
                if isinstance(e, TaskStatusUpdated) and e.task_id == task_id]

    def task_ended(self, task_id: str) -> bool:
        """The task has both its statuses: running, then how it ended."""
        return len(self.task_statuses(task_id)) == 2

    def runner_statuses(self) -> list[str]:
        return [e.status.kind for e in self.events if isinstance(e, RunnerStatusUpdated)]


async def wait_until(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    """Poll `predicate` every 20 ms; fail after `timeout` seconds."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


@contextlib.asynccontextmanager
async def supervised_runner(
    *, engine: EngineDescription, config: EngineConfig, runner_id: RunnerId = RUNNER,
    instance_id: InstanceId = INSTANCE, ready_timeout: float = 15.0,
    shutdown_timeout: float = 1.0,
) -> AsyncIterator[tuple[RunnerSupervisor, Recorder]]:
    """A runner told to load and warm up, yielded once ready; shut down on exit."""
    recorder = Recorder()
    supervisor = RunnerSupervisor(
        runner_id=runner_id, instance_id=instance_id, engine=engine, config=config,
        on_event=recorder.on_event, on_chunk=recorder.on_chunk)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(supervisor.run)
        await wait_until(lambda: supervisor.status is not None)
        supervisor.send(messages.LoadModelRequest())
        supervisor.send(messages.WarmUpRequest())
        await wait_until(lambda: isinstance(supervisor.status, RunnerReady),
                         timeout=ready_timeout)
        yield supervisor, recorder
        await supervisor.shutdown(timeout=shutdown_timeout)
        tasks.cancel_scope.cancel()


def echo_instead(**knobs: object) -> Callable[..., RunnerSupervisor]:
    """A supervisor factory for a node under test: its runners run the echo test engine
    whatever engine the instance names, with the options the worker gave that the echo
    engine takes (how it is split, batching) and these knobs (`delay`, `crash_at`)."""
    def supervisor(**kwargs: Any) -> RunnerSupervisor:
        config: EngineConfig = kwargs["config"]
        given = {name: value for name, value in config.options.given().items()
                 if name in EchoOptions.model_fields}
        options = EchoOptions.parse({**given, **knobs})
        return RunnerSupervisor(**{**kwargs, "engine": ECHO,
                                   "config": dataclasses.replace(config, options=options)})
    return supervisor
