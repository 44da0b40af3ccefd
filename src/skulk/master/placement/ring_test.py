from skulk.master.placement.ring import assign_ring_port
from skulk.shared.types.ids import InstanceId, ModelId, NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment


def ringed(instance_id: str, port: int, width: int) -> Instance:
    shards = {RunnerId(f"{instance_id}-{r}"): ShardAssignment(
        node_id=NodeId(f"n{r}"), rank=r, world_size=width, start_layer=r, end_layer=r + 1)
        for r in range(width)}
    return Instance(instance_id=InstanceId(instance_id), model_id=ModelId("m"), engine="mlx",
                    sharding="pipeline", shards=shards, context_token_limit=8, ring_port=port)


def test_the_port_is_a_function_of_the_id_and_the_taken_ports() -> None:
    ports = range(53000, 54000)
    first = assign_ring_port(InstanceId("inst-a"), 2, [], ports)
    assert first is not None and first in ports
    assert assign_ring_port(InstanceId("inst-a"), 2, [], ports) == first
    others = {assign_ring_port(InstanceId(f"inst-{i}"), 2, [], ports) for i in range(20)}
    assert len(others) > 10  # ids spread over the range


def test_a_block_overlapping_a_live_instance_is_skipped() -> None:
    ports = range(100, 106)
    live = [ringed("x", 100, 3)]  # holds 100, 101, 102
    for name in ("a", "b", "c", "d"):
        port = assign_ring_port(InstanceId(name), 2, live, ports)
        assert port is not None and port >= 103 and port + 1 < 106
    assert assign_ring_port(InstanceId("a"), 4, live, ports) is None
    assert assign_ring_port(InstanceId("a"), 7, [], ports) is None
