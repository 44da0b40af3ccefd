"""Placing, finding, deleting and asking MLX instances of the bundled model on a test
cluster (tests/conftest.py's trio, in tests/test_mlx_cluster.py and
tests/test_mlx_heads_cluster.py): a test serves through an instance of its shape that an
earlier test left, or places one."""

from typing import Any

import httpx

from tests.node_process import NodeProcess

READY_SECONDS = 240.0
PROMPTS = ["What is the capital of France?", "Write a haiku about rivers."]
MOST_TOKENS = 12

# The shapes the forced-tools checks serve through (tests/mlx_forced_tools.py): each is
# placed once in its module, not once per test (a placement is a runner start, a load and
# a warm-up on every rank). By layers on two nodes other than the API's (`excluded_nodes`).
SHAPES: dict[str, dict[str, Any]] = {"heads": {"min_nodes": 3, "sharding": "tensor"},
                                     "whole": {"min_nodes": 1},
                                     "layers": {"min_nodes": 2, "sharding": "pipeline"}}


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


def greedy(node: NodeProcess, prompt: str) -> str:
    reply = httpx.post(f"{node.url}/v1/chat/completions", timeout=180, json={
        "model": "smollm2-135m", "max_tokens": MOST_TOKENS, "temperature": 0,
        "messages": [{"role": "user", "content": prompt}]})
    assert reply.status_code == 200, reply.text
    text: str = reply.json()["choices"][0]["message"]["content"]
    assert text
    return text


def served_by(node: NodeProcess, **placement: Any) -> tuple[dict[str, Any], list[str]]:
    """A new instance placed so, once ready, and its greedy answers to PROMPTS."""
    placed = place(node, **placement)
    assert placed.status_code == 201, placed.text
    instance = node.wait_instance_ready(placed.json()["instance_id"], READY_SECONDS)
    return instance, [greedy(node, prompt) for prompt in PROMPTS]


def placement_of(api: NodeProcess, shape: str) -> dict[str, Any]:
    """What to place for SHAPES[shape] on a cluster `api` serves: by layers, on the nodes
    other than `api` (a node that holds no rank takes the requests)."""
    if shape != "layers":
        return SHAPES[shape]
    return {**SHAPES[shape], "excluded_nodes": [api.node_id()]}
