"""`GET /cluster` at 200 nodes: every node with its own probed edges, and `skulk status`
of that answer fits a screen."""

import time

import pytest

from skulk.api.routers.instances_test import api_context, serve
from skulk.cli.status_view import LISTED_NODES, status_lines
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import PeerReachability, Reachability, ReachableAddress
from skulk.testing.placement import node

NODES = 200
EDGES_EACH = 8


def name(i: int) -> str:
    return f"n{i:03d}"


def address(i: int) -> str:
    return f"10.0.{i // 250}.{i % 250 + 1}"


@pytest.mark.anyio
async def test_two_hundred_nodes_each_with_its_own_edges() -> None:
    readings = []
    for i in range(NODES):
        peers = [PeerReachability(
            node_id=NodeId(name((i + step) % NODES)), observed_at=0.0, ttl_seconds=1e12,
            addresses=[ReachableAddress(address=address((i + step) % NODES), rtt_ms=0.3)])
            for step in range(1, EDGES_EACH + 1)]
        reach = Reachability(addresses=[address(i)], listen_ports=[7447], peers=peers)
        readings.append(node(name(i)).model_copy(
            update={"stamp": time.time(), "reachability": reach}))
    context, _ = api_context(readings)
    async with serve(context) as client:
        reply = await client.get("/cluster")
    assert reply.status_code == 200
    body = reply.json()
    assert [n["node_id"] for n in body["nodes"]] == [name(i) for i in range(NODES)]
    for i, listed in enumerate(body["nodes"]):
        assert sorted(p["node_id"] for p in listed["reachable_peers"]) == sorted(
            name((i + step) % NODES) for step in range(1, EDGES_EACH + 1))
    lines = status_lines(body)
    assert len(lines) < LISTED_NODES, "a screen, not a line per node"
    assert any(line.startswith("  200 more nodes up and healthy") for line in lines)
