from hypothesis import given
from hypothesis import strategies as st

from skulk.api.reorder import ReorderBuffer


def test_in_order_items_pass_straight_through() -> None:
    buffer: ReorderBuffer[str] = ReorderBuffer()
    assert buffer.push(0, "a") == ["a"]
    assert buffer.push(1, "b") == ["b"]


def test_early_items_wait_for_the_gap() -> None:
    buffer: ReorderBuffer[str] = ReorderBuffer()
    assert buffer.push(1, "b") == []
    assert buffer.push(2, "c") == []
    assert buffer.push(0, "a") == ["a", "b", "c"]


def test_duplicates_are_dropped() -> None:
    buffer: ReorderBuffer[str] = ReorderBuffer()
    buffer.push(0, "a")
    assert buffer.push(0, "a") == []
    buffer.push(2, "c")
    assert buffer.push(2, "c") == []


def test_a_lost_item_is_skipped_once_the_buffer_overflows() -> None:
    buffer: ReorderBuffer[int] = ReorderBuffer(max_buffered=2)
    assert buffer.push(1, 1) == [] and buffer.push(2, 2) == []
    assert buffer.push(3, 3) == [1, 2, 3]
    assert buffer.skipped == 1


@given(st.permutations(list(range(20))))
def test_any_arrival_order_releases_everything_in_order(order: list[int]) -> None:
    buffer: ReorderBuffer[int] = ReorderBuffer()
    released = [item for seq in order for item in buffer.push(seq, seq)]
    assert released == list(range(20))
