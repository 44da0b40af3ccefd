from skulk.master.placement import ClusterView, previews
from skulk.testing.placement import GIB, node, nodes, smollm2


def test_previews_list_every_shape_with_figures_or_a_reason() -> None:
    cluster = ClusterView(nodes=nodes(node("a"), node("b"), node("c", 1 * GIB)))
    found = {(p.engine, p.sharding, p.width): p for p in previews(smollm2(), cluster)}
    assert len(found) == 3 * 2 * 2  # widths 1..3, two shardings, two engines

    whole = found[("llama_cpp", "pipeline", 1)]
    assert whole.reason is None and whole.plan is not None
    [rank] = whole.plan.ranks
    assert rank.node_id == "a" and rank.needed_bytes < rank.usable_bytes == 8 * GIB

    llama_split = found[("llama_cpp", "pipeline", 2)]
    assert llama_split.reason is None and llama_split.plan is not None
    assert [(r.start_layer, r.end_layer) for r in llama_split.plan.ranks] == [(0, 15), (15, 30)]
    assert found[("llama_cpp", "tensor", 2)].reason == \
        "llama_cpp does not split a model by tensor"
    two_way = found[("mlx", "tensor", 2)]
    assert two_way.plan is None and two_way.reason is not None
    assert "9 query heads and 3 KV heads do not divide by 2" in two_way.reason

    three_way = found[("mlx", "tensor", 3)]
    assert three_way.plan is not None and [r.end_layer for r in three_way.plan.ranks] == [30] * 3
    # c has 1 GiB: enough for a third of the model, so every rank fits
    assert three_way.reason is None

    pipeline = found[("mlx", "pipeline", 3)]
    assert pipeline.plan is not None
    assert [(r.start_layer, r.end_layer) for r in pipeline.plan.ranks] == [(0, 14), (14, 28),
                                                                          (28, 30)]


def test_a_preview_that_does_not_fit_says_which_node_falls_short() -> None:
    cluster = ClusterView(nodes=nodes(node("a", 1 * GIB)))
    [llama, mlx, mlx_tensor] = [p for p in previews(smollm2(), cluster)
                                if p.sharding == "pipeline" or p.engine == "mlx"]
    assert llama.reason is None
    assert mlx.reason is not None and mlx.reason.startswith("does not fit (a: mlx whole needs")
    assert mlx.plan is not None and not mlx.plan.fits  # figures still shown
    assert mlx_tensor.sharding == "tensor" and mlx_tensor.reason is not None


def test_excluded_nodes_leave_no_previews() -> None:
    cluster = ClusterView(nodes=nodes(node("a")))
    assert previews(smollm2(), cluster, excluded=[node("a").node_id]) == []


def test_a_preview_on_a_gpu_node_shows_the_layers_and_gpu_memory_it_would_use() -> None:
    from skulk.fitting.offload import GPU_RESERVE_BYTES
    from skulk.testing.placement import cuda_node, gguf_card

    cluster = ClusterView(nodes=nodes(cuda_node("a", vram_free=4 * GIB)))
    [whole] = [p for p in previews(gguf_card(8 * GIB), cluster) if p.engine == "llama_cpp"
               and p.sharding == "pipeline"]
    assert whole.reason is None and whole.plan is not None
    [rank] = whole.plan.ranks
    assert rank.gpu_layers == 9
    assert GPU_RESERVE_BYTES < rank.vram_needed_bytes < rank.vram_usable_bytes == 4 * GIB
