from pathlib import Path

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from skulk.models.catalog import ModelCatalog
from skulk.shared.types.chunks import Chunk, DataChunk
from skulk.shared.types.commands import (
    AddModelCard,
    CancelTask,
    Command,
    CommandEnvelope,
    DeleteInstance,
    PlaceInstance,
    RefusePlacement,
    RemoveModelCard,
    ReplaceInstance,
    TaskFinished,
    TextGeneration,
)
from skulk.shared.types.election import ElectionMessage, StateSyncMessage
from skulk.shared.types.events import IndexedEvent, LocalEvent, LocalEventBatch
from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId, SessionId
from skulk.shared.types.runners import (
    RunnerCreated,
    RunnerFailed,
    RunnerLoaded,
    RunnerLoading,
    RunnerReady,
    RunnerRunning,
    RunnerShutdown,
    RunnerStatus,
    RunnerWarmingUp,
)
from skulk.shared.types.telemetry import GpuDevice, NodeTelemetry
from skulk.shared.types.wire import from_msgpack, to_msgpack
from skulk.testing import factories as f

NODE = NodeId("node-a")
CMD = CommandId("cmd-1")


def wire_values() -> list[BaseModel]:
    values: list[BaseModel] = [
        IndexedEvent(master_node=NodeId("m"), index=i, session=SessionId("s"), event=e)
        for i, e in enumerate(f.one_of_each_event())
    ]
    values += [LocalEvent(origin=NODE, epoch="e1", origin_seq=3, event=f.one_of_each_event()[0])]
    values += [LocalEventBatch(origin=NODE, events=[LocalEvent(
        origin=NODE, epoch="e1", origin_seq=seq, event=f.one_of_each_event()[seq])
        for seq in range(2)])]
    commands: list[Command] = [
        PlaceInstance(command_id=CMD, instance_id=InstanceId("i"), model_id=ModelId("m")),
        DeleteInstance(command_id=CMD, instance_id=InstanceId("i")),
        ReplaceInstance(command_id=CMD, instance_id=InstanceId("i"), reason="rank died"),
        RefusePlacement(command_id=CMD, instance_id=InstanceId("i"), node_id=NODE,
                        reason="needs 1.2 GiB, 0.8 GiB free"),
        TextGeneration(command_id=CMD, owner_node=NODE, params=f.params()),
        CancelTask(command_id=CMD, target_command_id=CommandId("c2")),
        TaskFinished(command_id=CMD, target_command_id=CommandId("c2")),
        AddModelCard(command_id=CMD, node_id=NODE, card=f.added_card()),
        RemoveModelCard(command_id=CMD, node_id=NODE, model_id=ModelId("tiny-added")),
    ]
    values += [CommandEnvelope(origin=NODE, command=c) for c in commands]
    values += [DataChunk(command_id=CMD, owner_node=NODE, sequence=i, chunk=c)
               for i, c in enumerate(f.chunks())]
    values += [
        NodeTelemetry(node_id=NODE, stamp=1.5, memory_total_bytes=10,
                      memory_available_bytes=5, cpu_count=2, backends=["llama_cpp-cpu"],
                      has_worker=True),
        NodeTelemetry(node_id=NODE, stamp=1.5, memory_total_bytes=10,
                      memory_available_bytes=5, cpu_count=2, backends=["llama_cpp-cuda"],
                      has_worker=True,
                      gpus=[GpuDevice(name="NVIDIA GeForce RTX 4090", backend="cuda",
                                      vram_total_bytes=24 * 1024**3,
                                      vram_free_bytes=23 * 1024**3)]),
        ElectionMessage(node_id=NODE, clock=1, seniority=0, commands_seen=4),
        StateSyncMessage(kind="replay_request", node_id=NODE, from_index=7),
        f.instance(),
        f.task(),
    ]
    values += ModelCatalog.builtin(Path(".")).cards()
    return values


@pytest.mark.parametrize("value", wire_values(), ids=lambda v: type(v).__name__)
def test_json_round_trip(value: BaseModel) -> None:
    assert type(value).model_validate_json(value.model_dump_json()) == value


@pytest.mark.parametrize("value", wire_values(), ids=lambda v: type(v).__name__)
def test_msgpack_round_trip(value: BaseModel) -> None:
    assert from_msgpack(type(value), to_msgpack(value)) == value


@pytest.mark.parametrize("value", wire_values(), ids=lambda v: type(v).__name__)
def test_unknown_fields_are_rejected(value: BaseModel) -> None:
    raw = value.model_dump(mode="json") | {"surprise": 1}
    with pytest.raises(ValidationError):
        type(value).model_validate(raw)


@pytest.mark.parametrize("status", [
    RunnerCreated(), RunnerLoading(), RunnerLoaded(), RunnerWarmingUp(), RunnerReady(),
    RunnerRunning(), RunnerFailed(error="x"), RunnerShutdown(),
])
def test_runner_status_union_round_trips(status: RunnerStatus) -> None:
    adapter: TypeAdapter[RunnerStatus] = TypeAdapter(RunnerStatus)
    assert adapter.validate_json(adapter.dump_json(status)) == status


def test_chunk_union_picks_the_tagged_type() -> None:
    adapter: TypeAdapter[Chunk] = TypeAdapter(Chunk)
    for chunk in f.chunks():
        assert adapter.validate_json(adapter.dump_json(chunk)) == chunk


def test_wire_values_are_frozen_and_strict() -> None:
    event = f.task()
    with pytest.raises(ValidationError):
        event.status = "running"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        DataChunk.model_validate({"command_id": "c", "owner_node": "n", "sequence": "1",
                                  "chunk": {"kind": "token", "text": "x"}})


def test_gpu_readings_are_bounded() -> None:
    good = {"name": "gpu", "backend": "cuda", "vram_total_bytes": 1, "vram_free_bytes": 1}
    for bad in ({"vram_free_bytes": -1}, {"name": "x" * 257}, {"backend": "rocm"}):
        with pytest.raises(ValidationError):
            GpuDevice.model_validate(good | bad)
    reading = {"node_id": "n", "stamp": 0.0, "memory_total_bytes": 1,
               "memory_available_bytes": 1, "cpu_count": 1, "backends": [],
               "has_worker": True}
    assert NodeTelemetry.model_validate(reading).gpus == []  # older readings stay valid
    with pytest.raises(ValidationError):
        NodeTelemetry.model_validate(reading | {"gpus": [good] * 17})


def test_garbage_msgpack_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        from_msgpack(IndexedEvent, b"\xc1\xff not msgpack")
