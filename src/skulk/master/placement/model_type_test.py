"""Placement refuses a split the engine cannot make for the model's architecture, with the
reason, before any node tries it."""

from skulk.master.placement import ClusterView, PlacementError, place
from skulk.shared.types.instances import Instance
from skulk.testing.placement import RunnerIds, command, node, nodes, smollm2


def placed_mlx(model_type: str, **fields: object) -> Instance | PlacementError:
    card = smollm2(gguf=False).model_copy(update={"model_type": model_type,
                                                  "family": model_type})
    cluster = ClusterView(nodes=nodes(node("a", backends=["mlx-cpu"]),
                                      node("b", backends=["mlx-cpu"])))
    return place(command(engine="mlx", min_nodes=2, **fields), card, cluster, RunnerIds())


def test_an_unknown_family_is_refused_for_a_split_with_its_name() -> None:
    result = placed_mlx("qwen3_moe")
    assert isinstance(result, PlacementError) and not result.pending
    assert "qwen3_moe: pipeline sharding not supported yet" in result.message


def test_a_family_without_a_head_split_is_refused_tensor_but_splits_by_layers() -> None:
    tensor = placed_mlx("phi3", sharding="tensor")
    assert isinstance(tensor, PlacementError)
    assert "phi3: tensor sharding not supported" in tensor.message
    assert isinstance(placed_mlx("phi3"), Instance)


def test_a_known_family_splits() -> None:
    result = placed_mlx("qwen3")
    assert isinstance(result, Instance) and len(result.shards) == 2


def test_a_model_of_any_family_still_places_whole() -> None:
    card = smollm2(gguf=False).model_copy(update={"model_type": "qwen3_moe"})
    cluster = ClusterView(nodes=nodes(node("a", backends=["mlx-cpu"])))
    assert isinstance(place(command(engine="mlx"), card, cluster, RunnerIds()), Instance)
