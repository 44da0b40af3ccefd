from skulk.shared.types.ids import ConversationId, TaskId
from skulk.worker.engines.llama_cpp.slots import SlotTable, common_prefix, reusable


def test_reuse_is_the_common_prefix_less_the_last_prompt_token_when_all_is_held() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert reusable([1, 2, 3], [1, 2, 4]) == 2
    assert reusable([1, 2, 3, 9], [1, 2, 3]) == 2, "the last prompt token is evaluated again"
    assert reusable([], [1]) == 0


def test_a_request_takes_the_free_sequence_holding_most_of_its_prompt() -> None:
    table = SlotTable(3)
    first, second, third = table.slots
    table.take(first, TaskId("a"), None, keep=0)
    first.held = [1, 2, 3, 4]
    table.release(first)
    table.take(second, TaskId("b"), None, keep=0)
    second.held = [1, 2, 9]
    table.release(second)
    pick = table.pick([1, 2, 3, 4, 5], None)
    assert pick is not None and pick.slot is first and pick.reused == 4
    table.take(first, TaskId("c"), None, keep=pick.reused)
    assert first.owner == "c" and first.held == [1, 2, 3, 4]
    pick = table.pick([1, 2, 3, 4, 5], None)
    assert pick is not None and pick.slot is second and pick.reused == 2, "first is busy"
    assert third.held == [] and len(table.free()) == 2


def test_with_nothing_to_reuse_a_sessionless_least_recently_used_sequence_is_taken() -> None:
    table = SlotTable(3)
    kept, old, new = table.slots
    for slot, session in [(kept, ConversationId("s")), (old, None), (new, None)]:
        table.take(slot, TaskId(f"t{slot.index}"), session, keep=0)
        slot.held = [100 + slot.index]
        table.release(slot)
    pick = table.pick([7, 8], None)
    assert pick is not None and pick.slot is old and pick.reused == 0
    pick = table.pick([7, 8], ConversationId("s"))
    assert pick is not None and pick.slot is kept, "a session goes back to its own sequence"


def test_every_sequence_busy_means_no_pick_and_idle_holders_are_listed_oldest_first() -> None:
    table = SlotTable(2)
    a, b = table.slots
    table.take(a, TaskId("a"), None, keep=0)
    table.take(b, TaskId("b"), None, keep=0)
    assert table.pick([1], None) is None
    a.held, b.held = [1, 2], [3]
    table.release(b)
    table.release(a)
    assert table.idle_holding() == [b, a] and table.cells_held() == 3
