"""The native relay on a real pipe, socket and event loop: what it passes on reaches the
supervisor's end unchanged and in order, a direct stream's tokens reach its socket as the
very bytes the Python path writes, and a stream goes direct only when nothing of it is
still on its way through Python."""

import json
import os
import socket
import time
from collections.abc import Iterator

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skulk._native import Relay
from skulk.api.adapters.openai_chat import chunk_body
from skulk.api.consume import sse
from skulk.api.text_event import TextEvent
from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import CommandId, TaskId
from skulk.shared.types.runners import RunnerReady
from skulk.worker.runner import direct_streams, messages
from skulk.worker.runner.messages import TOKENS_PLAIN, FromRunner
from skulk.worker.runner.pipe_frames import encode
from skulk.worker.runner.runner_output import RunnerOutput

TASK, OTHER = TaskId("task-direct"), TaskId("task-python")
COMMAND = CommandId("cmd-1")
CONTENT = TextEvent(lambda text: sse(chunk_body("chatcmpl-1", 1, "m", {"content": text})))


def step(*pieces: tuple[TaskId, str, list[int]]) -> messages.TokensProduced:
    return messages.tokens_produced([(task, COMMAND, text, ids) for task, text, ids in pieces])


def chunked(event: bytes) -> bytes:
    """An event in one HTTP/1.1 chunk, as uvicorn frames a streamed body."""
    return b"%x\r\n" % len(event) + event + b"\r\n"


def received(client: socket.socket, expected: int) -> bytes:
    client.settimeout(5.0)
    got = b""
    while len(got) < expected:
        got += client.recv(1 << 16)
    return got


def started_relay() -> tuple[Relay, int, int]:
    """A relay reading a new runner pipe: it, the pipe's write end (the runner's) and the
    read end of what it passes on (Python's), both the caller's to close."""
    runner_end, writer = os.pipe()
    onward_read, onward = os.pipe()
    return Relay(runner_end, onward), writer, onward_read


@pytest.fixture
def sockets() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


@pytest.mark.anyio
async def test_everything_passes_on_unchanged_and_in_order_and_a_torn_end_shows() -> None:
    runner_end, writer = os.pipe()
    seen: list[FromRunner] = []

    def keep(batch: list[FromRunner]) -> list[FromRunner]:
        seen.extend(batch)
        return []

    output = RunnerOutput(runner_end, keep, relay=True)
    sent: list[FromRunner] = [
        messages.StatusReport(status=RunnerReady()),
        messages.TaskAcknowledged(task_id=TASK),
        step((TASK, "a", [1]), (OTHER, "é", [2, 3])),
        messages.ChunkProduced(task_id=TASK, command_id=COMMAND, chunk=TokenChunk(
            text="!", token_ids=[4], finish_reason="stop")),
        messages.TaskEnded(task_id=TASK, status="complete")]
    frames = encode(sent, TOKENS_PLAIN)
    os.write(writer, frames + frames[:7])  # then the runner dies mid-frame
    os.close(writer)
    with anyio.fail_after(5):
        while not output.ended:
            await output.take(0.1)
    assert seen == sent
    assert output.torn and output.bad_frame is None
    output.close()


@pytest.mark.anyio
async def test_a_direct_streams_tokens_leave_as_the_python_paths_bytes(
        sockets: tuple[socket.socket, socket.socket]) -> None:
    server, client = sockets
    runner_end, writer = os.pipe()
    relay_side: list[direct_streams.RunnerRelay] = []
    seen: list[FromRunner] = []

    def handle(batch: list[FromRunner]) -> list[FromRunner]:
        relay_side[0].count(batch)  # as the supervisor counts what it hands on
        seen.extend(batch)
        return []

    output = RunnerOutput(runner_end, handle, relay=True)
    assert output.relay is not None
    streams = direct_streams.DirectStreams()
    told: list[TaskId] = []
    relay_side.append(direct_streams.RunnerRelay(output.relay, streams, told.append))
    relay_side[0].offer(TASK)
    try:
        streams.first_token_out(OTHER)  # not offered: nobody to tell
        streams.first_token_out(TASK)
        assert told == [TASK]  # the supervisor tells the runner
        os.write(writer, encode([step((TASK, "first", [1]))], TOKENS_PLAIN))
        with anyio.fail_after(5):
            while not seen:
                await output.take(0.05)
        assert streams.writing() == 0
        direct = streams.go_direct(TASK, server.fileno(), CONTENT.head, CONTENT.tail)
        assert direct is not None
        assert streams.writing() == 1
        texts = ['a "quote"', "", "\\ \n\t\u2028", "🦊 é"]
        os.write(writer, encode([step((TASK, text, [index]), (OTHER, "x", [9]))
                                 for index, text in enumerate(texts)], TOKENS_PLAIN))
        expected = b"".join(chunked(CONTENT(text)) for text in texts if text)
        assert received(client, len(expected)) == expected
        with anyio.fail_after(5):
            while len(seen) < 1 + len(texts):
                await output.take(0.05)
        assert [m.pieces for m in seen[1:] if isinstance(m, messages.TokensProduced)] == [
            [(OTHER, COMMAND, "x", [9])]] * len(texts)  # the other stream's, unchanged
        back = direct.take_back()
        assert back is not None
        assert back.written_tokens == [0, 1, 2, 3]
        assert (back.pending_text, back.unsent, back.gone, back.events) == ("", b"", False, 3)
        assert direct.take_back() is None
        assert streams.writing() == 0
    finally:
        relay_side[0].ended(TASK)
        os.close(writer)
        output.close()


def test_a_stream_goes_direct_only_once_python_handled_what_was_passed_on(
        sockets: tuple[socket.socket, socket.socket]) -> None:
    server, client = sockets
    relay, writer, onward_read = started_relay()
    os.write(writer, encode([step((TASK, "a", [1]))], TOKENS_PLAIN))
    assert os.read(onward_read, 1 << 16)  # passed on: Python has it, not yet handled
    handled = 0
    task_relay = direct_streams.TaskRelay(relay, TASK, lambda: handled, lambda: None)
    assert task_relay.go_direct(server.fileno(), b"<", b">") is None
    handled = 1
    direct = task_relay.go_direct(server.fileno(), b"<", b">")
    assert direct is not None
    os.write(writer, encode([step((TASK, "b", [2]))], TOKENS_PLAIN))
    assert received(client, 8) == b'5\r\n<"b">\r\n'
    assert relay.take_relayed(TASK) == 1
    back = direct.take_back()
    assert back is not None and back.written_tokens == [2]
    os.close(writer)
    assert os.read(onward_read, 1 << 16) == b""  # the runner's end closes Python's
    os.close(onward_read)


def test_a_client_gone_ends_the_direct_stream(
        sockets: tuple[socket.socket, socket.socket]) -> None:
    server, client = sockets
    relay, writer, onward_read = started_relay()
    direct = direct_streams.TaskRelay(relay, TASK, lambda: 0, lambda: None).go_direct(
        server.fileno(), b"<", b">")
    assert direct is not None
    client.close()
    os.write(writer, encode([step((TASK, "a", [1])), step((TASK, "b", [2]))], TOKENS_PLAIN))
    relayed, deadline = 0, time.monotonic() + 5
    while relayed < 2 and time.monotonic() < deadline:  # both pieces reached the relay
        relayed += relay.take_relayed(TASK)
        time.sleep(0.01)
    back = direct.take_back()
    assert back is not None and back.gone
    os.close(writer)
    os.close(onward_read)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=4))
def test_any_text_renders_as_pythons_event(texts: list[str]) -> None:
    server, client = socket.socketpair()
    relay, writer, onward_read = started_relay()
    direct = direct_streams.TaskRelay(relay, TASK, lambda: 0, lambda: None).go_direct(
        server.fileno(), CONTENT.head, CONTENT.tail)
    assert direct is not None
    try:
        os.write(writer, encode([step((TASK, text, [1])) for text in texts], TOKENS_PLAIN))
        # A text Rust cannot read as UTF-8 (a lone surrogate) is Python's to write.
        readable = [text for text in texts if _utf8(text)]
        expected = b"".join(chunked(CONTENT(text)) for text in readable if text)
        assert received(client, len(expected)) == expected
        for event in expected.split(b"\r\n")[1::2]:
            assert json.loads(event.removeprefix(b"data: "))  # each is one whole event
    finally:
        os.close(writer)
        direct.take_back()
        server.close()
        client.close()
        os.close(onward_read)


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
