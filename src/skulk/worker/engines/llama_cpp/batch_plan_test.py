from skulk.shared.types.ids import TaskId
from skulk.worker.engines.llama_cpp.batch_plan import BatchEntry, Feed, plan


def feed(name: str, sequence: int, position: int, tokens: list[int]) -> Feed:
    return Feed(TaskId(name), sequence, position, tokens)


def test_decoding_tokens_and_a_whole_prompt_fit_one_batch_with_logits_at_each_end() -> None:
    portions, entries = plan([feed("d", 0, 7, [42]), feed("p", 1, 0, [1, 2, 3])], budget=8,
                             chunk=4)
    assert entries == [BatchEntry(42, 7, 0, True), BatchEntry(1, 0, 1, False),
                       BatchEntry(2, 1, 1, False), BatchEntry(3, 2, 1, True)]
    assert [(p.feed.task_id, p.count, p.logits_at) for p in portions] == \
        [("d", 1, 0), ("p", 3, 3)]
    assert all(p.completes for p in portions)


def test_a_long_prompt_is_prefilled_a_whole_chunk_at_a_time_without_logits() -> None:
    portions, entries = plan([feed("d", 0, 3, [5]), feed("p", 1, 4, list(range(10)))],
                             budget=8, chunk=4)
    assert [e.position for e in entries] == [3, 4, 5, 6, 7]
    assert not entries[-1].logits and portions[1].count == 4 and not portions[1].completes


def test_a_chunk_that_does_not_fit_waits_rather_than_shrinks() -> None:
    portions, entries = plan([feed("d", 0, 9, [1]), feed("p", 1, 0, [2, 3, 4, 5]),
                              feed("q", 2, 0, [6, 7])], budget=4, chunk=4)
    assert [p.feed.task_id for p in portions] == ["d", "q"] and len(entries) == 3
    assert plan([feed("a", 0, 0, [1])], budget=0, chunk=4) == ([], [])
