"""Placement refuses a split the engine cannot make for the model's architecture, with the
reason, before any node tries it."""

import pytest

from skulk.master.placement import ClusterView, PlacementError, place
from skulk.shared.types.instances import Instance
from skulk.testing.pipeline_only_family import register_pipeline_only_family
from skulk.testing.placement import RunnerIds, command, node, nodes, smollm2


def placed_mlx(model_type: str, **fields: object) -> Instance | PlacementError:
    # SmolLM2's size with heads that divide by two (its own 9 / 3 do not).
    card = smollm2(gguf=False).model_copy(update={"model_type": model_type,
                                                  "family": model_type,
                                                  "num_attention_heads": 8,
                                                  "num_key_value_heads": 2})
    cluster = ClusterView(nodes=nodes(node("a", backends=["mlx-cpu"]),
                                      node("b", backends=["mlx-cpu"])))
    return place(command(engine="mlx", min_nodes=2, **fields), card, cluster, RunnerIds())


def test_an_unknown_family_is_refused_for_a_split_with_its_name() -> None:
    result = placed_mlx("qwen3_moe")
    assert isinstance(result, PlacementError) and not result.pending
    assert "qwen3_moe: pipeline sharding not supported yet" in result.message


def test_a_family_without_a_head_split_is_refused_tensor_but_splits_by_layers(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    layers_only = register_pipeline_only_family(monkeypatch)
    tensor = placed_mlx(layers_only, sharding="tensor")
    assert isinstance(tensor, PlacementError)
    assert f"{layers_only}: tensor sharding not supported" in tensor.message
    assert isinstance(placed_mlx(layers_only), Instance)


@pytest.mark.parametrize("model_type", ["phi3", "gemma2"])
def test_fused_and_masked_families_split_by_heads(model_type: str) -> None:
    result = placed_mlx(model_type, sharding="tensor")
    assert isinstance(result, Instance) and len(result.shards) == 2


def test_a_known_family_splits() -> None:
    result = placed_mlx("qwen3")
    assert isinstance(result, Instance) and len(result.shards) == 2


def test_a_model_of_any_family_still_places_whole() -> None:
    card = smollm2(gguf=False).model_copy(update={"model_type": "qwen3_moe"})
    cluster = ClusterView(nodes=nodes(node("a", backends=["mlx-cpu"])))
    assert isinstance(place(command(engine="mlx"), card, cluster, RunnerIds()), Instance)
