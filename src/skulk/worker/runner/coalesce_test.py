from skulk.shared.types.chunks import ErrorChunk, TokenChunk, TokenLogprob, Usage
from skulk.shared.types.ids import CommandId, TaskId
from skulk.shared.types.runners import RunnerReady
from skulk.worker.runner import messages
from skulk.worker.runner.coalesce import coalesce
from skulk.worker.runner.messages import FromRunner


def chunk(task: str, text: str, token: int, **extra: object) -> messages.ChunkProduced:
    return messages.ChunkProduced(task_id=TaskId(task), command_id=CommandId(f"c-{task}"),
                                  chunk=TokenChunk.model_validate(
                                      {"text": text, "token_ids": [token], **extra}))


def texts(batch: list[FromRunner]) -> list[tuple[str, str]]:
    return [(m.task_id, m.chunk.text) for m in batch
            if isinstance(m, messages.ChunkProduced) and isinstance(m.chunk, TokenChunk)]


def test_a_requests_waiting_chunks_leave_as_one_in_the_first_ones_place() -> None:
    score = TokenLogprob(token="b", bytes=[98], logprob=-0.5, top=[])
    batch: list[FromRunner] = [chunk("a", "Hel", 1), chunk("b", "x", 9),
                               chunk("a", "lo", 2, logprobs=[score]), chunk("b", "y", 8)]
    out = coalesce(batch)
    assert texts(out) == [("a", "Hello"), ("b", "xy")]
    first = out[0]
    assert isinstance(first, messages.ChunkProduced) and isinstance(first.chunk, TokenChunk)
    assert first.chunk.token_ids == [1, 2] and first.chunk.logprobs == [score]


def test_the_final_chunk_absorbs_the_ones_before_it_and_the_end_stays_after() -> None:
    usage = Usage(prompt_tokens=3, completion_tokens=2)
    ended = messages.TaskEnded(task_id=TaskId("a"), status="complete")
    out = coalesce([chunk("a", "Hi", 1), chunk("a", "!", 2, finish_reason="stop", usage=usage),
                    ended, messages.StatusReport(status=RunnerReady())])
    assert len(out) == 3 and out[1] is ended
    final = out[0]
    assert isinstance(final, messages.ChunkProduced) and isinstance(final.chunk, TokenChunk)
    assert final.chunk.text == "Hi!" and final.chunk.finish_reason == "stop"
    assert final.chunk.usage == usage and final.chunk.token_ids == [1, 2]


def test_nothing_merges_past_an_end_an_error_or_a_final_chunk() -> None:
    error = messages.ChunkProduced(task_id=TaskId("b"), command_id=CommandId("c-b"),
                                   chunk=ErrorChunk(error_kind="internal", message="boom"))
    batch: list[FromRunner] = [
        chunk("a", "one", 1, finish_reason="length"), chunk("a", "two", 2),
        chunk("b", "x", 3), error, chunk("b", "y", 4),
        chunk("c", "p", 5), messages.TaskEnded(task_id=TaskId("c"), status="cancelled"),
        chunk("c", "q", 6)]
    assert len(coalesce(batch)) == len(batch)
    assert coalesce([chunk("a", "alone", 1)]) == [chunk("a", "alone", 1)]


def pieces(*entries: tuple[str, str, int]) -> messages.TokensProduced:
    return messages.TokensProduced(pieces=[
        (TaskId(task), CommandId(f"c-{task}"), text, [token]) for task, text, token in entries])


def test_packed_pieces_unpack_into_the_same_runs_as_chunks() -> None:
    usage = Usage(prompt_tokens=3, completion_tokens=4)
    batch: list[FromRunner] = [
        chunk("a", "H", 1), pieces(("a", "e", 2), ("b", "x", 9)),
        pieces(("a", "l", 3), ("b", "y", 8)),
        chunk("a", "lo", 4, finish_reason="stop", usage=usage),
        messages.TaskEnded(task_id=TaskId("a"), status="complete"), pieces(("b", "z", 7))]
    out = coalesce(batch)
    assert texts(out) == [("a", "Hello"), ("b", "xyz")]
    assert not any(isinstance(m, messages.TokensProduced) for m in out)
    first, second = out[0], out[1]
    assert isinstance(first, messages.ChunkProduced) and isinstance(first.chunk, TokenChunk)
    assert first.chunk.token_ids == [1, 2, 3, 4] and first.chunk.usage == usage
    assert first.chunk.finish_reason == "stop" and first.command_id == "c-a"
    assert isinstance(second, messages.ChunkProduced) and isinstance(second.chunk, TokenChunk)
    assert second.chunk.token_ids == [9, 8, 7] and second.chunk.finish_reason is None
    assert isinstance(out[2], messages.TaskEnded)  # a's end after its last chunk


def test_pieces_after_a_requests_end_start_a_new_run() -> None:
    out = coalesce([pieces(("a", "one", 1)), chunk("a", "", 2, finish_reason="length"),
                    pieces(("a", "late", 3))])
    assert texts(out) == [("a", "one"), ("a", "late")]
