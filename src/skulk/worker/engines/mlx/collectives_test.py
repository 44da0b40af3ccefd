import mlx.core as mx
import pytest

from skulk.worker.engines.mlx.collectives import GroupError, SoloGroup, connect_ring


def test_a_group_of_one_sums_and_gathers_to_itself() -> None:
    group = connect_ring(0, ["127.0.0.1:1"], deadline_seconds=1.0)
    assert isinstance(group, SoloGroup)
    assert (group.rank, group.size) == (0, 1)
    x = mx.array([1, 2, 3], dtype=mx.int32)
    assert group.all_sum(x).tolist() == [1, 2, 3]
    assert group.all_gather(x[None]).tolist() == [[1, 2, 3]]
    group.barrier()


def test_a_group_of_one_has_no_peer() -> None:
    group = SoloGroup()
    with pytest.raises(GroupError, match="no rank 1"):
        group.send(mx.zeros((2,)), 1)
    with pytest.raises(GroupError, match="no rank 1"):
        group.recv((2,), mx.float32, 1)
