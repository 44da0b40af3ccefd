from skulk.shared.types.ids import InstanceId, ModelId, NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.testing.placement import GIB, node, smollm2
from skulk.worker.fit_guard import refusal


def _pipeline_rank(start: int, end: int) -> tuple[Instance, ShardAssignment]:
    shard = ShardAssignment(node_id=NodeId("a"), rank=0, world_size=2, start_layer=start,
                            end_layer=end, ring_host="10.0.0.1")
    instance = Instance(instance_id=InstanceId("i"), model_id=ModelId("smollm2-135m"),
                        engine="mlx", sharding="pipeline", shards={RunnerId("r"): shard},
                        context_token_limit=8192, ring_port=53000)
    return instance, shard


def test_a_node_with_room_admits_its_shard() -> None:
    instance, shard = _pipeline_rank(0, 15)
    assert refusal(smollm2(), instance, shard, node("a", 8 * GIB)) is None


def test_a_node_that_filled_up_refuses_and_says_what_is_missing() -> None:
    instance, shard = _pipeline_rank(0, 15)
    why = refusal(smollm2(), instance, shard, node("a", 300 * 1024**2))
    assert why is not None and "rank 0 of smollm2-135m needs" in why and "usable now" in why


def test_a_smaller_slice_needs_less() -> None:
    small, small_shard = _pipeline_rank(0, 2)
    large, large_shard = _pipeline_rank(0, 28)
    # a node whose room lies between the two slices' needs admits only the small one
    room = node("a", 1 * GIB)
    assert refusal(smollm2(), small, small_shard, room) is None
    assert refusal(smollm2(), large, large_shard, room) is not None


def test_the_guard_admits_what_placement_placed_on_a_gpu_and_refuses_once_it_filled() -> None:
    from skulk.master.placement import ClusterView, place
    from skulk.testing.placement import RunnerIds, command, cuda_node, gguf_card, nodes

    card = gguf_card(8 * GIB)
    planned_on = cuda_node("a", vram_free=4 * GIB)  # 8 GiB of RAM alone would not do
    instance = place(command(model_id="big"), card, ClusterView(nodes=nodes(planned_on)),
                     RunnerIds())
    assert isinstance(instance, Instance), instance
    [shard] = instance.shards.values()
    assert shard.gpu_layers == 9  # stamped for the runner
    assert refusal(card, instance, shard, planned_on) is None
    gpu_filled = cuda_node("a", vram_free=2 * GIB)
    why = refusal(card, instance, shard, gpu_filled)
    assert why is not None and "9 layers in" in why and "of GPU memory" in why
