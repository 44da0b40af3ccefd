"""Frames on a real pipe: whole messages in order, whatever the read boundaries; end of
file and a torn last frame are told apart."""

import os

from skulk.shared.types.ids import TaskId
from skulk.worker.runner import messages
from skulk.worker.runner.pipe_frames import FrameReader, FrameWriter, encode, read_available

SAMPLE = [messages.TaskAcknowledged(task_id=TaskId("t1")),
          messages.TaskEnded(task_id=TaskId("t1"), status="complete"),
          {"big": "x" * 200_000}]


def test_messages_survive_any_split_of_the_bytes() -> None:
    data = encode(SAMPLE)
    for size in (1, 3, 7, 4096, len(data)):
        reader, got = FrameReader(), []
        for start in range(0, len(data), size):
            got += reader.feed(data[start:start + size])
        assert got == SAMPLE
        assert not reader.partial


def test_held_messages_leave_in_one_write_on_flush() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    writer = FrameWriter(write_end)
    writer.hold()
    writer.send(SAMPLE[0])
    writer.send(SAMPLE[1])
    assert read_available(read_end, FrameReader()) == ([], False)  # nothing written yet
    writer.flush()
    writer.send(SAMPLE[0])  # not held any more: written at once
    assert read_available(read_end, FrameReader()) == ([SAMPLE[0], SAMPLE[1], SAMPLE[0]],
                                                       False)
    os.close(write_end)
    assert read_available(read_end, FrameReader()) == ([], True)
    os.close(read_end)


def test_a_full_read_is_followed_by_another() -> None:
    """A read that filled its buffer may have left more in the pipe: it reads on."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.write(write_end, encode([SAMPLE[0], SAMPLE[1]]))
    assert read_available(read_end, FrameReader(), chunk_size=8) == ([SAMPLE[0], SAMPLE[1]],
                                                                     False)
    os.close(write_end)
    os.close(read_end)


def test_a_frame_cut_by_the_writers_death_is_reported_torn() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    data = encode([SAMPLE[0], SAMPLE[1]])
    os.write(write_end, data[:-5])
    os.close(write_end)
    reader = FrameReader()
    # The short read emptied the pipe: end of file shows on the next read.
    assert read_available(read_end, reader) == ([SAMPLE[0]], False)
    assert read_available(read_end, reader) == ([], True)
    assert reader.partial
    os.close(read_end)
