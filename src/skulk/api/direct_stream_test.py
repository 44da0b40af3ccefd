"""A stream handed to the native relay and taken back, with a client that does not read:
what reached the socket, the end of an event it took in part (written first, through the
transport) and the text the relay could not send (one chunk for the Python path) add up
to every token, in order, and what the relay delivered counts as delivered."""

import itertools
import os
import socket
import time
from types import SimpleNamespace
from typing import cast

import pytest

from skulk._native import Relay
from skulk.api.connection import Connection
from skulk.api.direct_stream import DirectOffer
from skulk.api.generation import Generation
from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import CommandId, TaskId
from skulk.worker.runner import direct_streams, messages
from skulk.worker.runner.messages import TOKENS_PLAIN
from skulk.worker.runner.pipe_frames import encode

TASK, COMMAND = TaskId("task-late"), CommandId("cmd-late")
HEAD, TAIL = b"<", b">"


class Transport:
    def __init__(self, server: socket.socket) -> None:
        self.server = server
        self.written: list[bytes] = []

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str) -> object:
        return self.server if name == "socket" else None

    def write(self, data: bytes) -> None:
        self.written.append(data)


def fakes(server: socket.socket) -> tuple[Connection, Generation, list[TokenChunk],
                                          list[float]]:
    transport = Transport(server)
    connection = SimpleNamespace(transport=transport, flow=SimpleNamespace(write_paused=False),
                                 chunked_encoding=True, disconnected=False)
    delivered: list[TokenChunk] = []
    counted: list[float] = []
    stream = SimpleNamespace(idle=True, progress=None)
    state = SimpleNamespace(task_for_command=lambda command: SimpleNamespace(task_id=TASK))
    context = SimpleNamespace(
        cluster=SimpleNamespace(replica=SimpleNamespace(state=state)),
        operations=SimpleNamespace(metrics=SimpleNamespace(
            native_stream_tokens=SimpleNamespace(inc=counted.append))))
    generation = SimpleNamespace(attempt=SimpleNamespace(stream=stream),
                                 current_command_id=COMMAND, context=context,
                                 delivered=delivered.append)
    return cast(Connection, connection), cast(Generation, generation), delivered, counted


def chunked(text: str) -> bytes:
    event = HEAD + b'"' + text.encode() + b'"' + TAIL
    return b"%x\r\n" % len(event) + event + b"\r\n"


def test_a_full_socket_leaves_the_rest_to_python_in_order() -> None:
    server, client = socket.socketpair()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    runner_end, writer = os.pipe()
    onward_read, onward = os.pipe()
    relay = Relay(runner_end, onward)
    streams = direct_streams.DirectStreams()
    streams.offer(TASK, direct_streams.TaskRelay(relay, TASK, lambda: 0, lambda: None))
    connection, generation, delivered, counted = fakes(server)
    offer = DirectOffer(streams, connection, HEAD, TAIL, generation)
    try:
        assert offer.start()
        texts = [f"{index:03d}" + "x" * 997 for index in range(64)]
        os.write(writer, encode([messages.tokens_produced([(TASK, COMMAND, text, [index])])
                                 for index, text in enumerate(texts)], TOKENS_PLAIN))
        relayed, deadline = 0, time.monotonic() + 5
        while relayed < len(texts) and time.monotonic() < deadline:
            relayed += relay.take_relayed(TASK)
            time.sleep(0.01)
        gaps, pending = offer.take_back()
        assert len(gaps) == len(texts)
        assert pending is not None, "the socket filled before the last token"
        client.setblocking(False)
        wire = b""
        while True:
            try:
                wire += client.recv(1 << 16)
            except BlockingIOError:
                break
        sent = [token for chunk in delivered for token in chunk.token_ids]
        assert counted == [len(sent)]
        assert sent + pending.token_ids == list(range(len(texts)))
        # The socket's bytes, then the transport's, are the delivered tokens' events whole.
        assert wire + b"".join(connection.transport.written) == b"".join(  # type: ignore[attr-defined]
            chunked(text) for text in texts[:len(sent)])
        assert pending.text == "".join(texts[len(sent):])
        assert offer.take_back() == ([], None)
    finally:
        os.close(writer)
        os.close(onward_read)
        server.close()
        client.close()


@pytest.mark.parametrize("unusual", ["write_paused", "disconnected", "buffered", "not_idle"])
def test_anything_unusual_keeps_the_python_path(unusual: str) -> None:
    server, client = socket.socketpair()
    connection, generation, _, _ = fakes(server)
    if unusual == "write_paused":
        connection.flow.write_paused = True
    elif unusual == "disconnected":
        connection.disconnected = True
    elif unusual == "buffered":
        connection.transport.get_write_buffer_size = lambda: 1  # type: ignore[method-assign]
    else:
        generation.attempt.stream.idle = False  # type: ignore[misc]
    streams = direct_streams.DirectStreams()
    streams.offer(TASK, direct_streams.TaskRelay(
        cast(Relay, SimpleNamespace(activate=pytest.fail)), TASK, lambda: 0, lambda: None))
    try:
        assert not DirectOffer(streams, connection, HEAD, TAIL, generation).start()
    finally:
        server.close()
        client.close()


class WatchedStream:
    """A stream that says whether it is idle (`answer`) and counts the questions."""

    def __init__(self) -> None:
        self.answer = False
        self.asked = 0
        self.progress: object = None

    @property
    def idle(self) -> bool:
        self.asked += 1
        return self.answer


def test_a_stream_refused_for_a_while_tries_again_ever_more_rarely() -> None:
    server, client = socket.socketpair()
    connection, generation, _, _ = fakes(server)
    stream = WatchedStream()
    generation.attempt.stream = stream  # type: ignore[assignment]
    streams = direct_streams.DirectStreams()
    activated: list[tuple[object, ...]] = []

    def activate(*args: object) -> bool:
        activated.append(args)
        return True

    relay = SimpleNamespace(activate=activate)
    streams.offer(TASK, direct_streams.TaskRelay(cast(Relay, relay), TASK, lambda: 0,
                                                      lambda: None))
    offer = DirectOffer(streams, connection, HEAD, TAIL, generation)
    tried = []
    try:
        for token in range(300):
            asked = stream.asked
            assert not offer.start()
            if stream.asked > asked:
                tried.append(token)
        # Every token at first, then after 2, 4, 8, ... tokens, at most 64 apart.
        assert tried[:8] == list(range(8))
        gaps = [later - earlier for earlier, later in itertools.pairwise(tried[7:])]
        assert gaps[:6] == [3, 5, 9, 17, 33, 65] and set(gaps[5:]) == {65}
        assert not activated
        stream.answer = True
        assert any(offer.start() for _ in range(65)) and len(activated) == 1
    finally:
        server.close()
        client.close()
