"""A node left alone after a two-node cluster holds 1 of the 2 members last agreed on: it
does what `--quorum`'s help says (in-memory bus, echo engine in real runners), and it shows
the node that was stopped on purpose as stopped, not lost."""

import argparse
from typing import Any

import anyio
import httpx
import pytest

from skulk.cli.run_arguments import add_run_arguments
from skulk.cluster.cluster_test import MODEL, Cluster, cluster
from skulk.node import Node

__all__ = ["cluster"]  # the fixture


def quorum_help() -> str:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    [action] = [a for a in parser._actions if "--quorum" in a.option_strings]
    return " ".join((action.help or "").split())


async def left_alone(cluster: Cluster, quorum: str) -> tuple[Node, dict[str, Any]]:
    """a and b agree on both as members, then b stops as `skulk stop` stops it; a's
    `/cluster` once it shows the minority and b stopped."""
    a = await cluster.start("a", quorum=quorum, force_master=True)
    b = await cluster.start("b", quorum=quorum, run_worker=False)
    await cluster.converged()
    with anyio.fail_after(20):
        while len(a.replica.state.members) < 2:
            await anyio.sleep(0.05)
    assert b.links is not None
    await b.links.say_stopping()  # what `skulk run` does before its transport closes
    await cluster.kill("b")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{a.config.api_port}") as http:
        with anyio.fail_after(20):
            while True:
                seen = (await http.get("/cluster")).json()
                if [n["state"] for n in seen["nodes"]].count("stopped") == 1:
                    return a, seen
                await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_under_quorum_available_a_lone_node_accepts_changes_and_keeps_them(
        cluster: Cluster) -> None:
    assert "'available' (default) serves the models it holds and accepts changes " \
           "(placements, deletions), which it hands to the majority's master" in quorum_help()
    a, seen = await left_alone(cluster, "available")
    assert not seen["partition"]["majority"]
    assert "holds 1 of the 2 members" in seen["partition"]["reason"]
    [stopped] = [n for n in seen["nodes"] if n["state"] == "stopped"]
    assert stopped["health"] == "warn"
    assert [r["code"] for r in stopped["health_reasons"]] == ["node_stopped"]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{a.config.api_port}",
                                 timeout=30) as http:
        placed = await http.post("/place_instance", json={"model_id": MODEL})
        assert placed.status_code == 201, placed.text
        instance = placed.json()["instance_id"]
        deleted = await http.delete(f"/instance/{instance}")
        assert deleted.status_code == 200, deleted.text
    assert a.seat is not None and a.seat.master is not None
    assert [type(c).__name__ for c in a.seat.master.carried] == \
        ["PlaceInstance", "DeleteInstance"], "kept for the majority's master at the heal"


@pytest.mark.anyio
async def test_under_quorum_majority_a_lone_node_refuses_changes(cluster: Cluster) -> None:
    assert "'majority' refuses changes and new requests with 503" in quorum_help()
    a, seen = await left_alone(cluster, "majority")
    assert not seen["partition"]["majority"] and seen["partition"]["quorum"] == "majority"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{a.config.api_port}",
                                 timeout=30) as http:
        refused = await http.post("/place_instance", json={"model_id": MODEL})
    assert refused.status_code == 503 and "1 of the 2 members" in refused.text
    assert a.replica.state.instances == {}
