"""Automatic placement against a master whose latest events have not reached this node."""

import itertools
from pathlib import Path

import anyio
import pytest

from skulk.api.context import ApiContext, ApiSettings, ClusterView, RequestBook
from skulk.api.serving import ensure_serving
from skulk.api.streams import StreamRegistry
from skulk.master.commands import CommandContext, events_for_command
from skulk.models.catalog import ModelCatalog
from skulk.shared.apply import apply
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import Command, PlaceInstance
from skulk.shared.types.events import (
    Event,
    IndexedEvent,
    InstanceCreated,
    RunnerStatusUpdated,
)
from skulk.shared.types.ids import (
    CommandId,
    InstanceId,
    ModelId,
    NodeId,
    RunnerId,
    SessionId,
    TaskId,
)
from skulk.shared.types.runners import RunnerReady
from skulk.shared.types.state import State
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing.channels import SendThrough

MODEL = ModelId("smollm2-135m")
MASTER = NodeId("node-a")
SESSION = SessionId("s")
counter = itertools.count()


class LaggingMaster:
    """A master (the real command rules) whose events reach the API's replica only when
    it handles the next command, as when a request arrives between the master indexing
    an event and this node applying it. Every instance it places is ready at once."""

    def __init__(self, replica: StateReplica) -> None:
        self.state = State()
        self.replica = replica
        self._undelivered: list[IndexedEvent] = []
        node = NodeTelemetry(node_id=MASTER, stamp=0.0, memory_total_bytes=16 << 30,
                             memory_available_bytes=8 << 30, cpu_count=2,
                             backends=["llama_cpp-cpu"], has_worker=True)
        self._context = CommandContext(
            catalog=ModelCatalog.builtin(Path(".")), nodes={MASTER: node},
            new_runner_id=lambda: RunnerId(f"run-{next(counter)}"),
            new_task_id=lambda: TaskId(f"task-{next(counter)}"))
        replica.restore(State(), SESSION, MASTER)

    def index(self, events: list[Event]) -> None:
        for event in events:
            indexed = IndexedEvent(index=self.state.last_event_applied_idx + 1,
                                   session=SESSION, master_node=MASTER, event=event)
            self.state = apply(self.state, indexed)
            self._undelivered.append(indexed)
            if isinstance(event, InstanceCreated):
                self.index([RunnerStatusUpdated(runner_id=runner, status=RunnerReady())
                            for runner in event.instance.shards])

    def place(self, command: PlaceInstance) -> None:
        self.index(events_for_command(self.state, command, self._context))

    async def send_command(self, command: Command) -> None:
        assert isinstance(command, PlaceInstance)
        self.place(command)
        for indexed in self._undelivered:
            self.replica.receive(indexed)
        self._undelivered = []


def api(master: LaggingMaster) -> ApiContext:
    return ApiContext(
        cluster=ClusterView(node_id=NodeId("node-b"), catalog=ModelCatalog.builtin(Path(".")),
                            replica=master.replica, telemetry=TelemetryView()),
        requests=RequestBook(streams=StreamRegistry(),
                             commands=SendThrough(master.send_command)),
        settings=ApiSettings(ready_timeout_seconds=5))


def replacement() -> PlaceInstance:
    """The master's own placement of a lost instance's model."""
    return PlaceInstance(command_id=CommandId(f"replace-{next(counter)}"),
                         instance_id=InstanceId(f"inst-{next(counter)}"), model_id=MODEL)


@pytest.mark.anyio
async def test_a_request_in_the_gap_before_the_masters_replacement_places_no_second_copy(
) -> None:
    master = LaggingMaster(StateReplica())
    master.place(replacement())  # indexed at the master, not yet applied here
    assert not master.replica.state.instances_of(MODEL)
    with anyio.fail_after(10):
        await ensure_serving(api(master), MODEL)
    assert len(master.state.instances_of(MODEL)) == 1
    assert master.replica.state.instances_of(MODEL) == master.state.instances_of(MODEL)


@pytest.mark.anyio
async def test_a_model_with_no_instance_anywhere_is_placed() -> None:
    master = LaggingMaster(StateReplica())
    with anyio.fail_after(10):
        await ensure_serving(api(master), MODEL)
    assert len(master.replica.state.instances_of(MODEL)) == 1
