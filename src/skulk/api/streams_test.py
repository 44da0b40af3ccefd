import time

import anyio
import pytest

from skulk.api.streams import StreamRegistry
from skulk.shared.types.chunks import DataChunk, ErrorChunk, TokenChunk, TokenLogprob, Usage
from skulk.shared.types.ids import CommandId, NodeId

C = CommandId("cmd-1")


def data(sequence: int, chunk: TokenChunk | ErrorChunk) -> DataChunk:
    return DataChunk(command_id=C, owner_node=NodeId("n"), sequence=sequence, chunk=chunk)


@pytest.mark.anyio
async def test_chunks_come_out_in_sequence_order_and_end_on_finish() -> None:
    registry = StreamRegistry()
    stream = registry.open(C)
    registry.dispatch(data(1, TokenChunk(text=" world", finish_reason="stop")))
    registry.dispatch(data(0, TokenChunk(text="hello")))
    registry.dispatch(data(0, TokenChunk(text="hello")))
    texts = [c.text async for c in stream if isinstance(c, TokenChunk)]
    assert texts == ["hello world"]  # both waited: the reader takes them as one


@pytest.mark.anyio
async def test_a_reader_takes_each_chunk_as_it_comes_when_it_keeps_up() -> None:
    registry = StreamRegistry()
    stream = registry.open(C)
    registry.dispatch(data(0, TokenChunk(text="hello", token_ids=[1])))
    first = await stream.next_chunk()
    registry.dispatch(data(1, TokenChunk(text=" world", token_ids=[2], finish_reason="stop")))
    last = await stream.next_chunk()
    assert isinstance(first, TokenChunk) and first.text == "hello"
    assert isinstance(last, TokenChunk) and last.text == " world" and stream.finished


def logprob(token: int) -> TokenLogprob:
    return TokenLogprob(token=str(token), bytes=[token], logprob=-0.5)


@pytest.mark.anyio
async def test_chunks_that_piled_up_come_as_one_with_everything_they_carried() -> None:
    registry = StreamRegistry()
    stream = registry.open(C)
    for index, word in enumerate(["a", " b", " c"]):
        registry.dispatch(data(index, TokenChunk(text=word, token_ids=[index],
                                                 logprobs=[logprob(index)])))
    registry.dispatch(data(3, TokenChunk(text="", finish_reason="stop", stop_sequence=" d",
                                         usage=Usage(prompt_tokens=2, completion_tokens=3))))
    [chunk] = [c async for c in stream]
    assert isinstance(chunk, TokenChunk) and stream.finished
    assert (chunk.text, chunk.token_ids, chunk.finish_reason) == ("a b c", [0, 1, 2], "stop")
    assert [entry.bytes for entry in chunk.logprobs] == [[0], [1], [2]]
    assert chunk.stop_sequence == " d" and chunk.usage is not None
    assert chunk.usage.completion_tokens == 3


@pytest.mark.anyio
async def test_an_error_after_piled_tokens_stays_its_own_chunk() -> None:
    registry = StreamRegistry()
    stream = registry.open(C)
    registry.dispatch(data(0, TokenChunk(text="a")))
    registry.dispatch(data(1, TokenChunk(text=" b")))
    registry.dispatch(data(2, ErrorChunk(error_kind="runner_failed", message="gone")))
    chunks = [c async for c in stream]
    assert [type(c).__name__ for c in chunks] == ["TokenChunk", "ErrorChunk"]
    assert isinstance(chunks[0], TokenChunk) and chunks[0].text == "a b"


@pytest.mark.anyio
async def test_chunks_for_unknown_streams_are_dropped() -> None:
    registry = StreamRegistry()
    registry.dispatch(data(0, TokenChunk(text="x")))
    assert registry.open_commands() == []


@pytest.mark.anyio
async def test_control_plane_failure_ends_the_stream() -> None:
    registry = StreamRegistry()
    stream = registry.open(C)
    registry.fail(C, ErrorChunk(error_kind="model_not_found", message="no"))
    chunk = await stream.next_chunk()
    assert isinstance(chunk, ErrorChunk) and stream.finished


@pytest.mark.anyio
async def test_silence_after_the_first_token_times_out() -> None:
    registry = StreamRegistry(idle_timeout=0.05)
    stream = registry.open(C)
    registry.dispatch(data(0, TokenChunk(text="a")))
    assert isinstance(await stream.next_chunk(), TokenChunk)
    chunk = await stream.next_chunk()
    assert isinstance(chunk, ErrorChunk) and chunk.error_kind == "timeout"


@pytest.mark.anyio
async def test_the_idle_limit_counts_from_each_wait_not_from_the_streams_first() -> None:
    """One timer serves every wait of a stream: chunks that come closer together than the
    limit, for longer than it in all, end nothing; silence after them still does."""
    registry = StreamRegistry(idle_timeout=0.15)
    stream = registry.open(C)
    registry.dispatch(data(0, TokenChunk(text="a")))
    await stream.next_chunk()

    async def trickle() -> None:
        for sequence in range(1, 6):
            await anyio.sleep(0.06)
            registry.dispatch(data(sequence, TokenChunk(text="b")))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(trickle)
        texts = [await stream.next_chunk() for _ in range(5)]  # 0.3 s in all
    assert all(isinstance(chunk, TokenChunk) and chunk.text == "b" for chunk in texts)
    started = anyio.current_time()
    chunk = await stream.next_chunk()
    assert isinstance(chunk, ErrorChunk) and chunk.error_kind == "timeout"
    assert anyio.current_time() - started >= 0.14


@pytest.mark.anyio
async def test_a_stream_the_relay_writes_times_out_only_when_its_runner_falls_silent() -> None:
    """While the native relay writes a stream's tokens none come here: the idle limit
    then measures the runner's last output (`progress`), not this stream's chunks."""
    registry = StreamRegistry(idle_timeout=0.05)
    stream = registry.open(C)
    registry.dispatch(data(0, TokenChunk(text="a")))
    await stream.next_chunk()
    heard = {"at": time.monotonic()}
    stream.progress = lambda: heard["at"]

    async def runner_writes_until(until: float) -> None:
        while time.monotonic() < until:
            heard["at"] = time.monotonic()
            await anyio.sleep(0.01)

    started = time.monotonic()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(runner_writes_until, started + 0.2)
        chunk = await stream.next_chunk()
    assert isinstance(chunk, ErrorChunk) and chunk.error_kind == "timeout"
    assert time.monotonic() - started >= 0.2  # not before the runner fell silent


@pytest.mark.anyio
async def test_no_timeout_before_the_first_token() -> None:
    registry = StreamRegistry(idle_timeout=0.01)
    stream = registry.open(C)
    with anyio.move_on_after(0.2) as waited:
        await stream.next_chunk()
    assert waited.cancelled_caught and not stream.finished  # still waiting, no error


@pytest.mark.anyio
async def test_a_cancelled_reader_leaves_the_stream_readable() -> None:
    registry = StreamRegistry()
    stream = registry.open(C)
    with anyio.move_on_after(0.01):
        await stream.next_chunk()
    registry.dispatch(data(0, TokenChunk(text="late")))
    chunk = await stream.next_chunk()
    assert isinstance(chunk, TokenChunk) and chunk.text == "late"


@pytest.mark.anyio
async def test_a_waiting_reader_wakes_for_a_chunk_and_for_a_close() -> None:
    registry = StreamRegistry()
    stream = registry.open(C)
    got: list[str] = []

    async def read() -> None:
        chunk = await stream.next_chunk()
        got.append(chunk.text if isinstance(chunk, TokenChunk) else "?")
        with pytest.raises(anyio.EndOfStream):
            await stream.next_chunk()
        got.append("closed")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        await anyio.sleep(0.01)
        registry.dispatch(data(0, TokenChunk(text="a")))
        await anyio.sleep(0.01)
        registry.close(C)
    assert got == ["a", "closed"]
