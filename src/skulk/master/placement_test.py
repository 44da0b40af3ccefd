from pathlib import Path

from skulk.master.placement import (
    ClusterView,
    PlacementError,
    context_token_limit,
    place,
    shard_need_bytes,
    whole_model,
)
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.ids import NodeId
from skulk.shared.types.instances import Instance
from skulk.shared.types.model_cards import EngineName
from skulk.shared.types.telemetry import HeldModel, NodeTelemetry
from skulk.testing.placement import GIB, RunnerIds, command, node, nodes, smollm2


def placed(cluster: dict[NodeId, NodeTelemetry] | ClusterView, **fields: object
           ) -> Instance | PlacementError:
    view = cluster if isinstance(cluster, ClusterView) else ClusterView(nodes=cluster)
    return place(command(**fields), smollm2(), view, RunnerIds())


def layout(result: Instance | PlacementError) -> list[tuple[str, int, int]]:
    assert isinstance(result, Instance), result
    ranks = sorted(result.shards.values(), key=lambda s: s.rank)
    return [(s.node_id, s.start_layer, s.end_layer) for s in ranks]


def whole_need(engine: EngineName = "llama_cpp") -> int:
    card = smollm2()
    return shard_need_bytes(card, engine, whole_model(card), node("x"))


def test_fits_whole_on_the_roomiest_node_with_llama_cpp_first() -> None:
    result = placed(nodes(node("a", 2 * GIB), node("b", 6 * GIB)))
    assert layout(result) == [("b", 0, 30)]
    assert isinstance(result, Instance)
    assert result.engine == "llama_cpp" and result.ring_port is None
    assert result.context_token_limit == 8192


def test_builtin_card_places_whole_on_one_node() -> None:
    card = ModelCatalog.builtin(Path(".")).resolve("smollm2-135m")
    assert card is not None
    result = place(command(), card, ClusterView(nodes=nodes(node("a"))), RunnerIds())
    assert isinstance(result, Instance) and result.engine == "llama_cpp"


def test_an_exact_fit_is_refused_and_one_byte_more_admits() -> None:
    need = whole_need()
    exact = placed(nodes(node("a", need, backends=["llama_cpp-cpu"])))
    assert isinstance(exact, PlacementError) and "needs" in exact.per_node[NodeId("a")]
    assert layout(placed(nodes(node("a", need + 1, backends=["llama_cpp-cpu"])))) == [
        ("a", 0, 30)]


def test_memory_is_never_summed_across_nodes() -> None:
    need = whole_need()
    two_halves = nodes(node("a", need * 6 // 10, backends=["llama_cpp-cpu"]),
                       node("b", need * 6 // 10, backends=["llama_cpp-cpu"]))
    result = placed(two_halves)
    assert isinstance(result, PlacementError) and not result.pending
    assert all("llama_cpp whole needs 0.78 GiB, has 0.47 GiB usable" not in why
               and "llama_cpp layers" in why for why in result.per_node.values()), \
        "each half of a split needs its context's KV and a floor too"
    assert set(result.per_node) == {"a", "b"}
    # Neither holds it whole: split by layers, each holds a share that fits it alone.
    roomier = nodes(node("a", need * 9 // 10, backends=["llama_cpp-cpu"]),
                    node("b", need * 9 // 10, backends=["llama_cpp-cpu"]))
    split_in_two = placed(roomier)
    assert isinstance(split_in_two, Instance) and split_in_two.engine == "llama_cpp"
    assert {s.node_id for s in split_in_two.shards.values()} == {"a", "b"}
    # A split: a roomy node does not make up for one below the floor.
    split = placed(nodes(node("a", 64 * GIB), node("tiny", 300 * 1024**2)), min_nodes=2)
    assert isinstance(split, PlacementError)
    assert "has 0.29 GiB usable" in split.per_node[NodeId("tiny")]


def test_when_no_single_node_fits_it_splits_with_mlx_over_the_fewest_nodes() -> None:
    mlx_need = whole_need("mlx")
    room = mlx_need * 7 // 10  # two nodes together are enough, one alone is not
    mlx_only = ["mlx-cpu"]
    cluster = nodes(node("a", room, mlx_only), node("b", room + 1, mlx_only),
                    node("c", room + 2, mlx_only), node("d", 100 * 1024**2, mlx_only))
    result = placed(cluster)
    assert isinstance(result, Instance) and result.engine == "mlx"
    assert [n for n, _, _ in layout(result)] == ["b", "c"]  # the two roomiest, by id
    assert result.ring_port is not None


def test_min_nodes_is_honoured_and_never_exceeds_the_cluster() -> None:
    cluster = nodes(node("a", 3 * GIB), node("b", 2 * GIB), node("c", 1 * GIB))
    assert layout(placed(cluster, min_nodes=3)) == [("a", 0, 15), ("b", 15, 25), ("c", 25, 30)]
    assert len(layout(placed(cluster, min_nodes=2))) == 2
    too_many = placed(cluster, min_nodes=4)
    assert isinstance(too_many, PlacementError) and not too_many.pending
    assert "min_nodes=4 asks for more than the 3 usable node(s)" in too_many.message
    waiting = placed(ClusterView(nodes=cluster, live_nodes=frozenset({*cluster, NodeId("d")})),
                     min_nodes=4)
    assert isinstance(waiting, PlacementError) and waiting.pending


def test_excluded_nodes_are_not_used_and_say_so() -> None:
    cluster = nodes(node("a", 8 * GIB), node("b", 4 * GIB))
    assert layout(placed(cluster, excluded_nodes=["a"])) == [("b", 0, 30)]
    result = placed(cluster, excluded_nodes=["a", "b"])
    assert isinstance(result, PlacementError)
    assert result.per_node == {"a": "excluded by the request", "b": "excluded by the request"}


def test_refusals_name_each_node_and_why() -> None:
    result = placed(nodes(node("a", 100), node("b", backends=[]),
                          node("d", has_worker=False)), engine="llama_cpp")
    assert isinstance(result, PlacementError)
    assert "usable" in result.per_node[NodeId("a")]
    assert "no llama_cpp backend" in result.per_node[NodeId("b")]
    assert "no worker" in result.per_node[NodeId("d")]


def test_missing_readings_make_a_failure_pending_not_impossible() -> None:
    small = nodes(node("a", 100))
    impossible = placed(ClusterView(nodes=small, live_nodes=frozenset({NodeId("a")})))
    assert isinstance(impossible, PlacementError) and impossible.kind == "impossible"
    waiting = ClusterView(nodes=small, live_nodes=frozenset({NodeId("a"), NodeId("late")}))
    pending = placed(waiting)
    assert isinstance(pending, PlacementError) and pending.pending
    assert "late" in pending.message
    nothing_yet = placed(ClusterView(nodes={}, live_nodes=frozenset({NodeId("self")})))
    assert isinstance(nothing_yet, PlacementError) and nothing_yet.pending
    # What is known already fits: no need to wait for the rest.
    roomy = ClusterView(nodes=nodes(node("a")), live_nodes=frozenset({NodeId("a"),
                                                                        NodeId("late")}))
    assert layout(placed(roomy)) == [("a", 0, 30)]


def test_tensor_two_way_is_refused_with_the_reason_three_way_is_placed() -> None:
    two = placed(nodes(node("a"), node("b")), sharding="tensor", min_nodes=2)
    assert isinstance(two, PlacementError) and not two.pending
    assert "9 query heads and 3 KV heads do not divide by 2" in two.message
    three = placed(nodes(node("a"), node("b"), node("c")), sharding="tensor", min_nodes=2)
    assert layout(three) == [("a", 0, 30), ("b", 0, 30), ("c", 0, 30)]
    assert isinstance(three, Instance) and three.engine == "mlx" and three.sharding == "tensor"


def test_pinning_an_engine_is_obeyed() -> None:
    cluster = nodes(node("a"), node("b"))
    pinned = placed(cluster, engine="mlx")
    assert isinstance(pinned, Instance) and pinned.engine == "mlx" and len(pinned.shards) == 1
    by_heads = placed(cluster, engine="llama_cpp", sharding="tensor", min_nodes=2)
    assert isinstance(by_heads, PlacementError)
    assert "llama_cpp does not split a model by tensor" in by_heads.message
    gguf_only = place(command(engine="mlx"), smollm2(mlx=False), ClusterView(nodes=cluster),
                      RunnerIds())
    assert isinstance(gguf_only, PlacementError) and "no weights for engine mlx" in (
        gguf_only.message)


def test_a_node_without_the_engine_backend_is_left_out_of_a_split() -> None:
    cluster = nodes(node("a"), node("b", 32 * GIB, backends=["llama_cpp-cpu"]), node("c"))
    assert [n for n, _, _ in layout(placed(cluster, engine="mlx", min_nodes=2))] == ["a", "c"]


def test_same_inputs_give_the_same_instance_and_ceiling() -> None:
    cluster = nodes(node("a", 3 * GIB), node("b", 5 * GIB), node("c", 4 * GIB))
    first = placed(cluster, min_nodes=3)
    again = placed(dict(reversed(list(cluster.items()))), min_nodes=3)
    assert first == again
    whole = placed(cluster)
    assert isinstance(first, Instance) and isinstance(whole, Instance)
    assert first.context_token_limit == whole.context_token_limit == context_token_limit(
        smollm2())


def test_ring_ports_avoid_those_of_live_instances() -> None:
    cluster = nodes(node("a"), node("b"))
    first = placed(cluster, min_nodes=2)
    assert isinstance(first, Instance) and first.ring_port is not None
    ports = range(first.ring_port, first.ring_port + 3)  # room for one 2-rank block only
    view = ClusterView(nodes=cluster, instances={first.instance_id: first}, ring_ports=ports)
    second = place(command(instance_id="j", min_nodes=2), smollm2(), view, RunnerIds())
    assert isinstance(second, PlacementError) and "ring ports" in second.message
    wider = range(first.ring_port, first.ring_port + 4)
    view = ClusterView(nodes=cluster, instances={first.instance_id: first}, ring_ports=wider)
    third = place(command(instance_id="j", min_nodes=2), smollm2(), view, RunnerIds())
    assert isinstance(third, Instance) and third.ring_port == first.ring_port + 2


def test_ring_hosts_come_from_the_edges_each_rank_neighbour_observed() -> None:
    cluster = nodes(node("a", 3 * GIB), node("b", 2 * GIB), node("c", 1 * GIB))
    result = placed(cluster, min_nodes=3)
    assert isinstance(result, Instance)
    ranks = sorted(result.shards.values(), key=lambda s: s.rank)
    # the builder gives a, b, c the addresses 10.0.0.1, .2, .3 and a full mesh of edges
    assert [s.ring_host for s in ranks] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    whole = placed(cluster)
    assert isinstance(whole, Instance)
    assert [s.ring_host for s in whole.shards.values()] == [None]


def test_a_ring_over_nodes_that_never_saw_each_other_is_refused() -> None:
    cluster = nodes(node("a", 3 * GIB), node("b", 2 * GIB), connected=False)
    result = placed(cluster, min_nodes=2)
    assert isinstance(result, PlacementError)
    assert "no observed reachability" in result.message
    assert set(result.per_node) == {"a", "b"}


def test_a_whole_instance_goes_where_its_weights_are_when_that_node_fits() -> None:
    held = HeldModel(model_id=smollm2().model_id, format="gguf", directory="d", files=[])
    holder = node("a", 2 * GIB).model_copy(update={"held_models": [held]})
    assert layout(placed(nodes(holder, node("b", 6 * GIB)))) == [("a", 0, 30)]
    # An importing engine (MLX) starts from the held GGUF too.
    assert layout(placed(nodes(holder, node("b", 6 * GIB)), engine="mlx")) == [("a", 0, 30)]
    # A holder too small for it is passed over for the roomiest.
    tiny = holder.model_copy(update={"memory_available_bytes": whole_need() // 4,
                                     "memory_total_bytes": whole_need() // 4})
    assert layout(placed(nodes(tiny, node("b", 6 * GIB)))) == [("b", 0, 30)]


def test_a_stage_copy_does_not_draw_a_whole_instance() -> None:
    stage = HeldModel(model_id=smollm2().model_id, format="gguf", directory="d", files=[],
                      layers=(0, 15))
    holder = node("a", 2 * GIB).model_copy(update={"held_models": [stage]})
    assert layout(placed(nodes(holder, node("b", 6 * GIB)))) == [("b", 0, 30)]


def test_a_node_short_of_its_sequences_own_kv_cells_is_not_chosen() -> None:
    """With room for one context's KV but not four, a node whose runners give each of
    their 4 sequences its own cells (`llama_cpp.shared_kv=off`) does not hold the model."""
    need = whole_need()
    card = smollm2()
    four = shard_need_bytes(card, "llama_cpp", whole_model(card),
                            node("x").model_copy(update={"kv_contexts": {"llama_cpp": 4}}))
    between = (need + four) // 2
    assert need < between < four
    shared = node("a", between)
    own_cells = node("b", between).model_copy(update={"kv_contexts": {"llama_cpp": 4}})
    assert layout(placed(nodes(shared))) == [("a", 0, 30)]
    assert isinstance(placed(nodes(own_cells), engine="llama_cpp"), PlacementError)
