"""Placing, finding and deleting MLX instances of the bundled model on a test cluster
(tests/test_mlx_cluster.py's trio): a test serves through an instance of its shape that an
earlier test left, or places one."""

from typing import Any

import httpx

from tests.node_process import NodeProcess

READY_SECONDS = 240.0


def place(node: NodeProcess, **fields: Any) -> httpx.Response:
    return httpx.post(f"{node.url}/place_instance", timeout=60,
                      json={"model_id": "smollm2-135m", "engine": "mlx", **fields})


def delete(node: NodeProcess, instance_id: str) -> None:
    assert httpx.delete(f"{node.url}/instance/{instance_id}", timeout=30).status_code < 300
    node.wait_until(lambda: not node.state()["instances"], 60.0, "the instance to go")


def has_shape(instance: dict[str, Any], placement: dict[str, Any]) -> bool:
    """`instance` is what `place(**placement)` asks for: as many ranks, split the same
    way, on none of the nodes it excludes."""
    nodes = {r["node_id"] for r in instance["ranks"]}
    return (len(instance["ranks"]) == placement["min_nodes"]
            and instance["sharding"] == placement.get("sharding", instance["sharding"])
            and not nodes & set(placement.get("excluded_nodes", [])))


def ready_instance(api: NodeProcess, placement: dict[str, Any]) -> dict[str, Any]:
    """A ready instance of that placement's shape: the one an earlier test left, or a new
    one (any other instance deleted first)."""
    for instance_id in api.state()["instances"]:
        instance = api.wait_instance_ready(instance_id, READY_SECONDS)
        if has_shape(instance, placement):
            return instance
        delete(api, instance_id)
    placed = place(api, **placement)
    assert placed.status_code == 201, placed.text
    return api.wait_instance_ready(placed.json()["instance_id"], READY_SECONDS)


def split_away_from(api: NodeProcess) -> dict[str, Any]:
    """A ready 2-rank pipeline on the other nodes (the one left by an earlier test, or a
    new one)."""
    for instance_id in api.state()["instances"]:
        instance = api.wait_instance_ready(instance_id, READY_SECONDS)
        if len(instance["ranks"]) == 2:
            return instance
        delete(api, instance_id)
    placed = place(api, min_nodes=2, excluded_nodes=[api.node_id()])
    assert placed.status_code == 201, placed.text
    return api.wait_instance_ready(placed.json()["instance_id"], READY_SECONDS)
