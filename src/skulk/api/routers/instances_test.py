"""The instance routes against an in-process app whose master runs the real command code."""

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from skulk.api.app import create_app
from skulk.api.context import ApiContext, ClusterView, RequestBook
from skulk.api.routers import instances
from skulk.api.streams import StreamRegistry
from skulk.master.commands import CommandContext, events_for_command
from skulk.master.placement.auto_test import BENCH_CORE
from skulk.master.placement.speed_test import calibrated, llama_1b_shape, pair
from skulk.models.catalog import ModelCatalog
from skulk.shared.replica import StateReplica
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.chunks import ErrorChunk
from skulk.shared.types.commands import Command
from skulk.shared.types.events import (
    CommandRejected,
    Event,
    IndexedEvent,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
)
from skulk.shared.types.ids import NodeId, RunnerId, SessionId, TaskId
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.runners import RunnerReady
from skulk.shared.types.state import State
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing.channels import SendThrough
from skulk.testing.placement import GIB, RunnerIds, node, nodes, smollm2


class InProcessMaster:
    """Turns commands into events with the master's own code and feeds the replica."""

    def __init__(self, api: ApiContext) -> None:
        self.api = api
        self.index = itertools.count()
        self.api.cluster.replica.receive(self.indexed(StateSnapshotHydrated(state=State())))

    def indexed(self, event: Event) -> IndexedEvent:
        return IndexedEvent(index=next(self.index), session=SessionId("s"),
                            master_node=NodeId("m"), event=event)

    async def send(self, command: Command) -> None:
        live = self.api.cluster.telemetry.live()
        context = CommandContext(catalog=self.api.cluster.catalog, nodes=live,
                                 new_runner_id=RunnerIds(), new_task_id=lambda: TaskId("t"))
        for event in events_for_command(self.api.cluster.replica.state, command, context):
            self.emit(event)

    def emit(self, event: Event) -> None:
        self.api.cluster.replica.receive(self.indexed(event))
        if isinstance(event, CommandRejected):
            self.api.requests.streams.fail(event.command_id, ErrorChunk(
                error_kind=event.error_kind, message=event.message))


@dataclass(frozen=True)
class LiveSet:
    live: frozenset[NodeId]


def api_context(readings: list[NodeTelemetry], live: set[str] | None = None,
                card: ModelCard | None = None) -> tuple[ApiContext, InProcessMaster]:
    telemetry = TelemetryView(clock=lambda: 0.0)
    for reading in readings:
        telemetry.update(reading)
    members = frozenset(NodeId(n) for n in (live or {r.node_id for r in readings}))
    context = ApiContext(
        cluster=ClusterView(node_id=NodeId("a"),
                            catalog=ModelCatalog([card or smollm2()], Path(".")),
                            replica=StateReplica(), telemetry=telemetry,
                            members=LiveSet(members)),
        requests=RequestBook(streams=StreamRegistry(),
                             commands=SendThrough(lambda command: master.send(command))))
    master = InProcessMaster(context)
    return context, master


@asynccontextmanager
async def serve(context: ApiContext) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(context))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield client


def three_nodes() -> tuple[ApiContext, InProcessMaster]:
    connected = nodes(node("a", 8 * GIB), node("b", 4 * GIB), node("c", 2 * GIB))
    return api_context(list(connected.values()))


@pytest.mark.anyio
async def test_place_then_read_an_instance_until_it_is_ready() -> None:
    context, master = three_nodes()
    async with serve(context) as client:
        await place_and_read(client, master)


async def place_and_read(client: httpx.AsyncClient, master: InProcessMaster) -> None:
    placed = await client.post("/place_instance", json={"model_id": "SmolLM2-135M-Instruct",
                                                        "min_nodes": 3})
    assert placed.status_code == 201, placed.text
    body = placed.json()
    assert body["engine"] == "llama_cpp" and body["status"] == "pending"
    assert [(r["node_id"], r["start_layer"], r["end_layer"]) for r in body["ranks"]] == [
        ("a", 0, 17), ("b", 17, 26), ("c", 26, 30)]  # 8:4:2 GiB, largest remainder
    assert isinstance(body["ring_port"], int)

    for rank in body["ranks"]:
        master.emit(RunnerStatusUpdated(runner_id=RunnerId(rank["runner_id"]),
                                        status=RunnerReady()))
    shown = (await client.get(f"/instance/{body['instance_id']}")).json()
    assert shown["status"] == "ready" and [r["runner_status"] for r in shown["ranks"]] == [
        "ready"] * 3

    deleted = await client.delete(f"/instance/{body['instance_id']}")
    assert deleted.json() == {"deleted": body["instance_id"]}
    gone = await client.get(f"/instance/{body['instance_id']}")
    assert gone.status_code == 410 and "deleted on request" in gone.json()["error"]["message"]
    assert (await client.get("/instance/inst-never")).status_code == 404


@pytest.mark.anyio
async def test_an_impossible_placement_is_a_400_that_says_why() -> None:
    async with serve(three_nodes()[0]) as client:
        await impossible(client)


async def impossible(client: httpx.AsyncClient) -> None:
    tensor = await client.post("/place_instance", json={
        "model_id": "smollm2-135m", "sharding": "tensor", "min_nodes": 2,
        "excluded_nodes": ["c"]})
    assert tensor.status_code == 400
    error = tensor.json()["error"]
    assert error["code"] == "placement_impossible"
    assert "9 query heads and 3 KV heads do not divide by 2" in error["message"]
    unknown = await client.post("/place_instance", json={"model_id": "gpt-9"})
    assert unknown.status_code == 404


@pytest.mark.anyio
async def test_missing_readings_are_a_503_after_a_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instances, "PLACEMENT_INFO_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(instances, "PLACEMENT_INFO_POLL_SECONDS", 0.05)
    context, _ = api_context([node("a", 100)], live={"a", "late"})
    async with serve(context) as client:
        response = await client.post("/place_instance", json={"model_id": "smollm2-135m"})
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "placement_pending"
    assert "late" in response.json()["error"]["message"]


@pytest.mark.anyio
async def test_previews_list_shapes_with_memory_per_node() -> None:
    async with serve(three_nodes()[0]) as client:
        await list_previews(client)


async def list_previews(client: httpx.AsyncClient) -> None:
    response = await client.get("/instance/previews", params={"model_id": "smollm2-135m"})
    assert response.status_code == 200
    body = response.json()
    assert body["model_id"] == "smollm2-135m" and body["waiting_for"] == []
    shapes = {(p["engine"], p["sharding"], p["width"]): p for p in body["previews"]}
    assert len(shapes) == 12
    whole = shapes[("llama_cpp", "pipeline", 1)]
    assert whole["fits"] and whole["nodes"][0]["node_id"] == "a"
    assert whole["nodes"][0]["needed_bytes"] < whole["nodes"][0]["usable_bytes"]
    assert "do not divide by 2" in shapes[("mlx", "tensor", 2)]["reason"]
    assert (await client.get("/instance/previews",
                             params={"model_id": "nope"})).status_code == 404
    assert (await client.get("/instance/previews")).status_code == 400


def two_machines(rtt_ms: float) -> tuple[ApiContext, InProcessMaster]:
    """Two MLX machines with measured decode constants that observed each other at
    `rtt_ms`, and a card of Llama-3.2-1B's shape."""
    return api_context(list(calibrated(pair(rtt_ms), BENCH_CORE).values()),
                       card=llama_1b_shape())


@pytest.mark.anyio
async def test_previews_mark_the_default_choice_and_placement_takes_it() -> None:
    for rtt_ms, expected in ((0.5, ("tensor", 2)), (5.0, ("pipeline", 1))):
        context, _ = two_machines(rtt_ms)
        async with serve(context) as client:
            body = (await client.get("/instance/previews",
                                     params={"model_id": "smollm2-135m"})).json()
            chosen = [(p["sharding"], p["width"]) for p in body["previews"]
                      if p["placed_by_default"]]
            assert chosen == [expected], (rtt_ms, chosen)
            mlx = {(p["sharding"], p["width"]): p for p in body["previews"]
                   if p["engine"] == "mlx"}
            heads, one = mlx["tensor", 2], mlx["pipeline", 1]
            assert heads["prediction_assumes"] == ["gigabit links"]
            faster = heads["predicted_decode_tps"] > 1.5 * one["predicted_decode_tps"]
            assert faster == (expected == ("tensor", 2))
            placed = await client.post("/place_instance", json={"model_id": "smollm2-135m"})
            assert placed.status_code == 201, placed.text
            assert (placed.json()["sharding"], len(placed.json()["ranks"])) == expected
