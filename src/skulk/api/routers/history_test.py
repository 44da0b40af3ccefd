import json

import anyio
import pytest

from skulk.api.context import ApiContext
from skulk.api.history.cluster import NODE_PATH
from skulk.api.history.recorder import MetricsHistory, NodeGauges
from skulk.api.history.sampler import mark_forever, sample_forever
from skulk.api.history.totals import CounterTotals, read_totals
from skulk.api.peer_reads import read_locally
from skulk.api.routers.instances_test import api_context, serve
from skulk.shared.types.ids import NodeId
from skulk.testing.placement import node


def sampled(history: MetricsHistory, *ats: float, cpu: float = 50.0) -> None:
    for at in ats:
        history.record(at, CounterTotals(), NodeGauges(cpu_percent=cpu, queue_depth=1))


def answering_peer(context: ApiContext, peer: MetricsHistory) -> None:
    async def ask_peer(node_id: NodeId, path: bytes, timeout: float) -> bytes | None:
        since = float(path.decode().partition("?since=")[2] or 0)
        return json.dumps({"status": 200, "body": peer.answer(since)}).encode()

    context.operations.ask_peer = ask_peer


@pytest.mark.anyio
async def test_the_cluster_history_adds_up_every_nodes_samples() -> None:
    context, _ = api_context([node("a"), node("b")])
    context.operations.history.clock = lambda: 1100.0
    sampled(context.operations.history.own, 1000.0, 1005.0, 1010.0, cpu=20.0)
    peer = MetricsHistory()
    sampled(peer, 1001.0, 1006.0, 1011.0, cpu=60.0)
    answering_peer(context, peer)
    async with serve(context) as client:
        body = (await client.get("/v1/history")).json()
        assert body["errors"] == {} and body["interval_seconds"] == 5.0
        assert body["cluster"]["t"] == [1005.0, 1010.0]
        assert body["cluster"]["cpu_percent"] == [40.0, 40.0]
        assert body["cluster"]["queue_depth"] == [2.0, 2.0]
        assert [n["node_id"] for n in body["nodes"]] == ["a", "b"]
        assert body["nodes"][1]["latest"]["cpu_percent"] == [60.0]

        newer = (await client.get("/v1/history", params={"since": 1005.0})).json()
        assert newer["cluster"]["t"] == [1010.0] and newer["since"] == 1005.0
        assert len(newer["nodes"]) == 2  # every node's latest, whatever `since`

        one = (await client.get("/v1/history/nodes/b")).json()
        assert one["series"]["t"] == [1005.0, 1010.0]
        missing = await client.get("/v1/history/nodes/nobody")
        assert missing.status_code == 404
        raw = (await client.get(NODE_PATH, params={"since": 1005.0})).json()
        assert raw["nodes"]["at"] == [1010.0]


def test_peers_read_the_raw_samples_and_nothing_malformed() -> None:
    context, _ = api_context([node("a")])
    sampled(context.operations.history.own, 0.0, 5.0, 10.0)
    status, body = read_locally(context, f"{NODE_PATH}?since=5", lambda _: {})
    assert status == 200 and body["nodes"]["at"] == [10.0]  # type: ignore[index]
    assert read_locally(context, f"{NODE_PATH}?since=nan", lambda _: {})[0] == 400
    assert read_locally(context, f"{NODE_PATH}?since=x", lambda _: {})[0] == 400
    assert read_locally(context, NODE_PATH, lambda _: {})[0] == 200


@pytest.mark.anyio
async def test_the_loops_sample_the_counters_and_mark_placements() -> None:
    context, _ = api_context([node("a")])
    history = context.operations.history.own
    metrics = context.operations.metrics
    async with serve(context) as client, anyio.create_task_group() as tasks:
        tasks.start_soon(mark_forever, history, context.cluster.replica)
        await anyio.sleep(0)  # subscribed before the placement
        placed = await client.post("/place_instance", json={"model_id": "smollm2-135m"})
        assert placed.status_code == 201
        clock = iter(range(0, 100_000, 5))
        tasks.start_soon(lambda: sample_forever(
            history, metrics, NodeGauges, clock=lambda: float(next(clock)), interval=0.01))
        with anyio.fail_after(5):
            while not history.nodes:  # past the baseline
                await anyio.sleep(0.01)
        metrics.count_tokens(placed.json()["instance_id"], 40)
        with anyio.fail_after(5):
            while not any(s.requests.tokens for s in history.nodes):
                await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()
    assert [m.kind for m in history.markers] == ["placement"]
    assert read_totals(metrics).instances[placed.json()["instance_id"]].tokens == 40
    assert sum(s.requests.tokens for s in history.nodes) == 40
