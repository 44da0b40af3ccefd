"""The MLX engine split by heads across real `skulk run` processes on 127.0.0.1: refused
where the heads do not divide, previewed and placed by predicted speed, and three ways
serving through the ordinary chat API, forced tools included (whole and by layers:
tests/test_mlx_cluster.py, on a trio of its own, so the two run side by side on
pytest-xdist's workers). Bounded: short replies, one instance at a time, every wait has a
deadline.
"""

from typing import Any

import pytest

from tests.mlx_forced_tools import forced_tools_json_schemas_and_ollama_format
from tests.mlx_placing import delete, place, placement_of, ready_instance, served_by
from tests.node_process import NodeProcess

pytestmark = pytest.mark.integration


def test_tensor_split_two_way_is_refused_and_says_why(trio: list[NodeProcess]) -> None:
    # SmolLM2 has 9 query and 3 KV heads: two nodes cannot share them evenly
    refused = place(trio[0], min_nodes=2, sharding="tensor",
                     excluded_nodes=[trio[2].node_id()])
    assert refused.status_code == 400, refused.text
    assert "do not divide by 2" in refused.text
    previews = trio[0].get("/instance/previews?model_id=smollm2-135m").json()
    two_way = [p for p in previews["previews"] if p["sharding"] == "tensor"
               and p["engine"] == "mlx" and p["width"] == 2]
    assert two_way and all("do not divide by 2" in (p["reason"] or "") for p in two_way)


def mlx_previews(node: NodeProcess) -> tuple[list[dict[str, Any]],
                                              dict[tuple[str, int], dict[str, Any]]]:
    """The bundled model's previews, and the MLX ones by (sharding, width)."""
    previews: list[dict[str, Any]] = node.get(
        "/instance/previews?model_id=smollm2-135m").json()["previews"]
    return previews, {(p["sharding"], p["width"]): p for p in previews if p["engine"] == "mlx"}


def test_previews_predict_speeds_and_speed_places_the_fastest(
        trio: list[NodeProcess]) -> None:
    # Each node measures its MLX kernels after it starts; on a loaded machine a fresh
    # clone's run read the previews before one had reported (its kernels still assumed).
    trio[0].wait_until(
        lambda: mlx_previews(trio[0])[1]["tensor", 3]["prediction_assumes"]
        == ["gigabit links"], 120, "every node's MLX kernels to be measured")
    previews, mlx = mlx_previews(trio[0])
    whole, layers, heads = mlx["pipeline", 1], mlx["pipeline", 2], mlx["tensor", 3]
    # Each node's kernels are measured on a shared, loaded machine, so the nodes' rates
    # differ by the load each met (a fresh clone's run read the split by layers 6 % ahead
    # of the whole model on its roomiest node). That one node beats a split by layers on
    # equal nodes is speed_test.py's; here, every shape has a prediction from them.
    assert whole["predicted_decode_tps"] > 0 and layers["predicted_decode_tps"] > 0
    assert heads["predicted_decode_tps"] > 0
    # The nodes measured their memory and observed each other: only the rate is assumed.
    assert heads["prediction_assumes"] == ["gigabit links"]
    placed = place(trio[0], prefer="speed")
    assert placed.status_code == 201, placed.text
    instance = placed.json()
    try:
        # Of the MLX shapes: the placement asks for MLX, and llama.cpp's shapes are in the
        # previews too, predicted faster (71.5 tok/s whole against MLX's 19.9 in a quiet
        # run); a fresh clone's loaded run read a split by layers fastest of all while MLX
        # placed the whole model. The nodes' measurements also move under load, and the
        # master chose between the two reads: the placed shape is the fastest in one.
        fastest = {fastest_shape(previews), fastest_shape(mlx_previews(trio[0])[0])}
        assert (instance["sharding"], len(instance["ranks"])) in fastest
    finally:  # not left for the next test, which waits for every instance to go
        delete(trio[0], instance["instance_id"])


def fastest_shape(previews: list[dict[str, Any]]) -> tuple[str, int]:
    """The MLX shape that fits and is predicted to decode fastest."""
    fastest = max((p for p in previews if p["fits"] and p["engine"] == "mlx"),
                  key=lambda p: p["predicted_decode_tps"])
    return fastest["sharding"], fastest["width"]


def test_tensor_split_three_way_serves(trio: list[NodeProcess]) -> None:
    instance, texts = served_by(trio[0], **placement_of(trio[0], "heads"))
    assert len(instance["ranks"]) == 3 and instance["sharding"] == "tensor"
    assert all(t.strip() for t in texts)
    # Left placed: the forced-tools test by heads serves through it.


def test_forced_tools_json_schemas_and_ollama_format_by_heads(
        trio: list[NodeProcess], whole_embeddings: list[list[float]]) -> None:
    api = trio[0]
    ready_instance(api, placement_of(api, "heads"))
    forced_tools_json_schemas_and_ollama_format(api, "heads", whole_embeddings)
