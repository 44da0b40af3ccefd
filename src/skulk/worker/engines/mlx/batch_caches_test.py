import mlx.core as mx
import pytest

from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.batch_caches import BatchCaches


def one_row(marker: float, length: int = 3) -> list[mlx_api.LayerCache]:
    """A one-row, one-layer cache whose keys are all `marker`."""
    cache = mlx_api.make_batch_cache(1, [0])
    keys = mx.full((1, 2, length, 4), marker)
    mlx_api.seed_row(cache, mlx_api.RowKv(((keys, keys * 2),), length), length)
    return cache


def marker(kv: mlx_api.RowKv) -> float:
    value: float = kv.layers[0][0][0, 0, 0, 0].item()  # type: ignore[assignment]
    return value


def test_one_micro_batch_is_the_plain_batch() -> None:
    batch = BatchCaches()
    for value in (1.0, 2.0, 3.0):
        batch.add(one_row(value))
    [(rows, _)] = batch.micro_batch_rows()
    assert rows == [0, 1, 2]
    assert [marker(batch.extract(r)) for r in range(3)] == [1.0, 2.0, 3.0]


def test_rows_go_to_the_smallest_micro_batch_and_keep_their_kv_through_leaves() -> None:
    batch = BatchCaches(micro_batches=2)
    for value in (1.0, 2.0, 3.0, 4.0, 5.0):
        batch.add(one_row(value))
    assert batch.members == [0, 1, 0, 1, 0]
    assert [rows for rows, _ in batch.micro_batch_rows()] == [[0, 2, 4], [1, 3]]
    assert [marker(batch.extract(r)) for r in range(5)] == [1.0, 2.0, 3.0, 4.0, 5.0]
    batch.keep([1, 2, 4])  # rows 0 and 3 leave
    assert batch.members == [1, 0, 0]
    assert [marker(batch.extract(r)) for r in range(3)] == [2.0, 3.0, 5.0]
    batch.add(one_row(6.0))  # micro-batch 1 has one row, 0 has two
    assert batch.members == [1, 0, 0, 1]
    assert marker(batch.extract(3)) == 6.0
    batch.keep([])
    assert batch.rows == 0 and batch.micro_batch_rows() == []


def test_a_speculative_round_takes_the_one_row() -> None:
    batch = BatchCaches(micro_batches=3)
    batch.add(one_row(7.0))
    assert mlx_api.cache_tokens(batch.only()) == 3
    with pytest.raises(ValueError):
        BatchCaches(micro_batches=0)
