from skulk.master.admission import concurrency, has_room
from skulk.shared.types.events import InstanceCreated, TaskCreated
from skulk.shared.types.ids import NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing import factories as f
from skulk.worker.engines.node_options import (
    EngineLimits,
    NodeEngineOptions,
    parse_node_engine_options,
)


def node_batch_sizes(options: NodeEngineOptions) -> dict[str, int]:
    return EngineLimits.of(options, batching=True).batch_sizes


def node_kv_contexts(options: NodeEngineOptions) -> dict[str, int]:
    return EngineLimits.of(options, batching=True).kv_contexts

OTHER = NodeId("node-b")


def reading(node: NodeId = f.NODE, **update: object) -> NodeTelemetry:
    return NodeTelemetry(node_id=node, stamp=0.0, memory_total_bytes=16 << 30,
                         memory_available_bytes=8 << 30, cpu_count=2,
                         backends=["llama_cpp-cpu"], has_worker=True).model_copy(update=update)


def split() -> Instance:
    """Rank 0 on node-a, rank 1 on node-b."""
    shards = {RunnerId(f"run-{rank}"): ShardAssignment(
        node_id=node, rank=rank, world_size=2, start_layer=15 * rank, end_layer=15 * rank + 15)
        for rank, node in enumerate([f.NODE, OTHER])}
    return f.instance().model_copy(update={"shards": shards})


def test_an_instance_runs_what_the_node_holding_its_rank_0_batches() -> None:
    whole = f.instance()
    assert concurrency(whole) == 4  # no reading: llama.cpp's default
    assert concurrency(whole, {f.NODE: reading()}) == 4  # a node that predates the field
    eight = reading(batch_sizes={"llama_cpp": 8})
    assert concurrency(whole, {f.NODE: eight}) == 8
    assert concurrency(whole, {f.NODE: eight.model_copy(update={"batching": False})}) == 1


def test_a_split_instance_batches_whatever_its_nodes_batching_flag_says() -> None:
    """Every rank of a split instance runs the same batch shape (`--no-batching` is for
    instances wholly on the node), and the head's batch size is the instance's."""
    head = reading(batch_sizes={"llama_cpp": 8}, batching=False)
    assert concurrency(split(), {f.NODE: head, OTHER: reading(OTHER)}) == 8
    assert concurrency(split(), {OTHER: reading(OTHER, batch_sizes={"llama_cpp": 2})}) == 4


def test_a_node_serving_one_request_at_a_time_queues_for_one_slot() -> None:
    whole = f.instance()
    state = f.state_with(InstanceCreated(instance=whole), *[
        TaskCreated(task=f.task(f"t{n}", "inst-1", f"c{n}")) for n in range(17)])
    # 16 queued per slot: one slot takes 17 requests, four slots 68.
    one_at_a_time = {f.NODE: reading(batch_sizes={"llama_cpp": 4}, batching=False)}
    assert not has_room(state, whole, None, one_at_a_time)
    assert has_room(state, whole, None, {f.NODE: reading(batch_sizes={"llama_cpp": 4})})


def test_a_node_reads_out_its_engine_options_batch_sizes() -> None:
    assert node_batch_sizes({})["llama_cpp"] == 4
    options = parse_node_engine_options(["llama_cpp.max_batch=8", "mlx.max_batch=2"])
    sizes = node_batch_sizes(options)
    assert sizes["llama_cpp"] == 8 and sizes["mlx"] == 2


def test_a_node_reads_out_how_many_contexts_of_kv_its_runners_hold() -> None:
    assert node_kv_contexts({})["llama_cpp"] == 1  # shared cells: one context
    own = parse_node_engine_options(["llama_cpp.shared_kv=off", "llama_cpp.max_batch=6"])
    assert node_kv_contexts(own)["llama_cpp"] == 6
