"""A card announced to the master: placeable from the master's own State at once, and
refused unread from a node that announces another node's store."""

import math
from pathlib import Path

import anyio
import pytest

from skulk.master.master import Master
from skulk.master.master_test import ListLog, master
from skulk.master.settings import MasterInbox
from skulk.models.catalog import ModelCatalog
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.commands import AddModelCard, CommandEnvelope, PlaceInstance
from skulk.shared.types.events import (
    IndexedEvent,
    InstanceCreated,
    LocalEventBatch,
    ModelCardAdded,
    StateSnapshotHydrated,
)
from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing import factories as f
from skulk.testing.channels import each_indexed_event

OTHER = NodeId("node-b")


@pytest.mark.anyio
async def test_an_announced_card_is_indexed_and_placeable() -> None:
    published: list[IndexedEvent] = []

    telemetry = TelemetryView()
    telemetry.update(NodeTelemetry(  # a worker node with room for the tiny model
        node_id=f.NODE, stamp=0.0, memory_total_bytes=16 << 30,
        memory_available_bytes=8 << 30, cpu_count=2, backends=["llama_cpp-cpu"],
        has_worker=True))
    _, commands = anyio.create_memory_object_stream[CommandEnvelope](math.inf)
    _, local_events = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    m = Master(node_id=f.NODE, catalog=ModelCatalog.builtin(Path("/nonexistent")),
               telemetry=telemetry, event_log=ListLog(),
               inbox=MasterInbox(commands=commands, local_events=local_events),
               indexed=each_indexed_event(published))
    await m.index([StateSnapshotHydrated(state=m.state)])
    await m.handle_command(CommandEnvelope(origin=f.NODE, command=AddModelCard(
        command_id=CommandId("add-1"), node_id=f.NODE, card=f.added_card())))
    assert published[-1].event == ModelCardAdded(card=f.added_card(), node_id=f.NODE)

    await m.handle_command(CommandEnvelope(origin=f.NODE, command=PlaceInstance(
        command_id=CommandId("place-1"), instance_id=InstanceId("inst-added"),
        model_id=ModelId("tiny-added"))))
    placed = published[-1].event
    assert isinstance(placed, InstanceCreated)
    assert placed.instance.model_id == "tiny-added"


@pytest.mark.anyio
async def test_a_card_for_another_nodes_store_is_dropped_and_counted() -> None:
    published: list[IndexedEvent] = []
    m = master(ListLog(), published)
    await m.index([StateSnapshotHydrated(state=m.state)])
    await m.handle_command(CommandEnvelope(origin=OTHER, command=AddModelCard(
        command_id=CommandId("add-1"), node_id=NodeId("node-c"), card=f.added_card())))
    assert len(published) == 1 and m.state.model_cards == {}
    assert m.refused_commands["another_nodes_store"] == 1
