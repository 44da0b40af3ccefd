import pytest
from hypothesis import given
from hypothesis import strategies as st

from skulk.master.placement.layers import (
    layer_ranges,
    proportional_layer_counts,
    tensor_split_problem,
)
from skulk.testing.placement import smollm2


def test_layers_follow_memory_three_two_one() -> None:
    assert proportional_layer_counts(30, [3, 2, 1]) == [15, 10, 5]
    assert layer_ranges([15, 10, 5]) == [(0, 15), (15, 25), (25, 30)]


def test_largest_remainder_rounds_and_ties_go_to_the_earlier_rank() -> None:
    # quotas 10.5 / 10.5 / 9 -> the one spare layer goes to rank 0
    assert proportional_layer_counts(30, [7, 7, 6]) == [11, 10, 9]
    # quotas 7.5 / 7.5 / 7.5 / 7.5 -> two spare layers, to ranks 0 and 1
    assert proportional_layer_counts(30, [1, 1, 1, 1]) == [8, 8, 7, 7]
    # quotas 17.14 / 12.86 -> rank 1 has the larger remainder
    assert proportional_layer_counts(30, [4, 3]) == [17, 13]


def test_a_tiny_node_still_gets_one_layer() -> None:
    assert proportional_layer_counts(30, [10_000, 1]) == [29, 1]
    assert proportional_layer_counts(3, [100, 1, 1]) == [1, 1, 1]
    with pytest.raises(ValueError):
        proportional_layer_counts(2, [1, 1, 1])


@given(st.integers(1, 120).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.integers(0, 10**12), min_size=1, max_size=min(n, 16)))))
def test_any_split_covers_every_layer_once(case: tuple[int, list[int]]) -> None:
    n_layers, memories = case
    counts = proportional_layer_counts(n_layers, memories)
    assert sum(counts) == n_layers and min(counts) >= 1
    ranges = layer_ranges(counts)
    assert ranges[0][0] == 0 and ranges[-1][1] == n_layers
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    # never more than one layer away from the exact quota, unless the one-layer minimum bit
    total = sum(memories) or len(memories)
    for count, memory in zip(counts, memories, strict=True):
        quota = n_layers * (memory if sum(memories) else 1) / total
        assert count <= quota + 1 or count == 1


def test_tensor_split_needs_heads_that_divide() -> None:
    card = smollm2()
    assert tensor_split_problem(card, 2) == "9 query heads and 3 KV heads do not divide by 2"
    assert tensor_split_problem(card, 3) is None
    assert tensor_split_problem(card, 1) is None
    even = card.model_copy(update={"num_attention_heads": 8})
    assert tensor_split_problem(even, 2) == "3 KV heads do not divide by 2"
