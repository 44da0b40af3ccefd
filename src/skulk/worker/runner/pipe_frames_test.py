"""Frames on a real pipe: whole messages in order, whatever the read boundaries; end of
file and a torn last frame are told apart; a frame that is no message of the pipe stops
the reader with what it was."""

import os
import struct

import pytest

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import CommandId, TaskId
from skulk.worker.runner import messages
from skulk.worker.runner.message_check import BadFrame
from skulk.worker.runner.messages import FROM_RUNNER, TO_RUNNER, FromRunner
from skulk.worker.runner.pipe_frames import FrameReader, FrameWriter, encode, read_available

SAMPLE: list[FromRunner] = [
    messages.TaskAcknowledged(task_id=TaskId("t1")),
    messages.TaskEnded(task_id=TaskId("t1"), status="complete"),
    messages.ChunkProduced(task_id=TaskId("t1"), command_id=CommandId("c1"),
                           chunk=TokenChunk(text="x" * 200_000))]


def reader() -> FrameReader[FromRunner]:
    return FrameReader(FROM_RUNNER)


def test_messages_survive_any_split_of_the_bytes() -> None:
    data = encode(SAMPLE)
    for size in (1, 3, 7, 4096, len(data)):
        frames, got = reader(), []
        for start in range(0, len(data), size):
            got += frames.feed(data[start:start + size])
        assert got == SAMPLE
        assert not frames.partial


def test_held_messages_leave_in_one_write_on_flush() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    writer: FrameWriter[FromRunner] = FrameWriter(write_end)
    writer.hold()
    writer.send(SAMPLE[0])
    writer.send(SAMPLE[1])
    assert read_available(read_end, reader()) == ([], False)  # nothing written yet
    writer.flush()
    writer.send(SAMPLE[0])  # not held any more: written at once
    assert read_available(read_end, reader()) == ([SAMPLE[0], SAMPLE[1], SAMPLE[0]],
                                                       False)
    os.close(write_end)
    assert read_available(read_end, reader()) == ([], True)
    os.close(read_end)


def test_a_full_read_is_followed_by_another() -> None:
    """A read that filled its buffer may have left more in the pipe: it reads on."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.write(write_end, encode([SAMPLE[0], SAMPLE[1]]))
    assert read_available(read_end, reader(), chunk_size=8) == ([SAMPLE[0], SAMPLE[1]],
                                                                     False)
    os.close(write_end)
    os.close(read_end)


def test_a_frame_cut_by_the_writers_death_is_reported_torn() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    data = encode([SAMPLE[0], SAMPLE[1]])
    os.write(write_end, data[:-5])
    os.close(write_end)
    frames = reader()
    # The short read emptied the pipe: end of file shows on the next read.
    assert read_available(read_end, frames) == ([SAMPLE[0]], False)
    assert read_available(read_end, frames) == ([], True)
    assert frames.partial
    os.close(read_end)


def test_a_frame_of_anything_else_stops_the_reader_naming_it() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.write(write_end, encode([SAMPLE[0], {"not": "a message"}, SAMPLE[1]]))
    frames = reader()
    # What came before it is delivered; the bad frame ends the reading like end of file.
    assert read_available(read_end, frames) == ([SAMPLE[0]], True)
    assert frames.bad_frame is not None
    assert "carried a dict ({'not': 'a message'})" in frames.bad_frame
    assert "TaskAcknowledged" in frames.bad_frame  # what it carries
    assert frames.feed(encode([SAMPLE[1]])) == []  # nothing after it is believed
    os.close(write_end)
    os.close(read_end)


def test_a_frame_that_does_not_unpickle_is_a_bad_frame() -> None:
    frames = reader()
    garbage = b"\x80\x05not a pickle"
    assert frames.feed(struct.pack("!I", len(garbage)) + garbage) == []
    assert frames.bad_frame is not None and "did not unpickle" in frames.bad_frame


def test_the_runners_inbox_check_passes_its_messages_only() -> None:
    shutdown = messages.ShutdownRequest()
    assert TO_RUNNER(shutdown) is shutdown
    with pytest.raises(BadFrame, match="worker → runner pipe carried a TaskAcknowledged"):
        TO_RUNNER(SAMPLE[0])


TOKENS = messages.tokens_produced([(TaskId("t1"), CommandId("c1"), " fox", [17]),
                                   (TaskId("t2"), CommandId("c2"), "é\u2028", [1, 2])])


def test_a_steps_tokens_cross_as_plain_values_and_come_back_equal() -> None:
    data = encode([SAMPLE[0], TOKENS, SAMPLE[1]], messages.TOKENS_PLAIN)
    assert b"skulk" not in data[len(encode([SAMPLE[0]])):-len(encode([SAMPLE[1]]))]
    for size in (1, 5, len(data)):
        frames, got = FrameReader(FROM_RUNNER, messages.TOKENS_PLAIN), []
        for start in range(0, len(data), size):
            got += frames.feed(data[start:start + size])
        assert got == [SAMPLE[0], TOKENS, SAMPLE[1]]
        assert isinstance(got[1], messages.TokensProduced)
        assert got[1].pieces == TOKENS.pieces


def test_plain_values_of_the_wrong_shape_or_on_a_pipe_without_them_are_bad_frames() -> None:
    plain = messages.TOKENS_PLAIN
    wrong = messages.tokens_produced([("t1", "c1", "x")])  # type: ignore[list-item]
    frames = FrameReader(FROM_RUNNER, plain)
    assert frames.feed(encode([SAMPLE[0], wrong], plain)) == [SAMPLE[0]]
    assert frames.bad_frame is not None and "not the pieces of TokensProduced" in \
        frames.bad_frame
    unexpected = reader()  # a reader told of no plain form
    assert unexpected.feed(encode([TOKENS], plain)) == []
    assert unexpected.bad_frame is not None and "plain values" in unexpected.bad_frame
