"""bench/bare_http.py's request reading and refusals, over a real socket pair, and its
server with a stand-in engine that fails mid-answer (the real engine behind it streams
to the `openai` client in test_bench_server_turns.py)."""

import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.bare_http import (  # noqa: E402
    ROUTE,
    BadRequest,
    chunked,
    event,
    params_of,
    read_request,
    serve,
)

from skulk.shared.types.chunks import TokenChunk  # noqa: E402
from skulk.shared.types.tasks import GenerationParams  # noqa: E402


def request(body: dict[str, object], target: bytes = ROUTE) -> bytes:
    data = json.dumps(body).encode()
    return (b"POST %s HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s"
            % (target, len(data), data))


CHAT = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3,
        "stream": True}


def test_two_requests_in_pieces_on_one_connection_are_read_one_after_the_other() -> None:
    server, client = socket.socketpair()
    with server, client:
        both = request(CHAT) + request({**CHAT, "max_tokens": 5})
        client.sendall(both[:10])
        client.sendall(both[10:])
        client.shutdown(socket.SHUT_WR)
        target, body, rest = read_request(server, b"") or (b"", b"", b"")
        assert target == ROUTE and params_of(target, body).max_tokens == 3
        target, body, rest = read_request(server, rest) or (b"", b"", b"")
        assert params_of(target, body).max_tokens == 5 and rest == b""
        assert read_request(server, rest) is None  # closed between requests


@pytest.mark.parametrize(("target", "body", "why"), [
    (b"/v1/completions", CHAT, "only POST /v1/chat/completions"),
    (ROUTE, {**CHAT, "stream": False}, "only streams"),
    (ROUTE, {"model": "m"}, "not a chat request"),
])
def test_what_the_benchmark_does_not_send_is_refused_with_the_reason(
        target: bytes, body: dict[str, object], why: str) -> None:
    with pytest.raises(BadRequest, match=why):
        params_of(target, json.dumps(body).encode())


def test_a_connection_closed_inside_a_request_is_refused() -> None:
    server, client = socket.socketpair()
    with server, client:
        client.sendall(request(CHAT)[:-4])
        client.shutdown(socket.SHUT_WR)
        with pytest.raises(BadRequest, match="inside a request body"):
            read_request(server, b"")


def test_an_event_is_one_chunk_of_an_openai_chat_chunk() -> None:
    data = chunked(event({"content": "Hi"}))
    size, _, rest = data.partition(b"\r\n")
    payload = rest.removesuffix(b"\r\n")
    assert int(size, 16) == len(payload) and payload.startswith(b"data: ")
    body = json.loads(payload.removeprefix(b"data: "))
    assert body["object"] == "chat.completion.chunk"
    assert body["choices"] == [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]


def test_an_engine_that_fails_mid_answer_ends_that_stream_and_serves_the_next() -> None:
    def generate(params: GenerationParams) -> Iterator[TokenChunk]:
        yield TokenChunk(text="a", token_ids=[1])
        if params.max_tokens == 1:
            raise RuntimeError("the engine broke")
        yield TokenChunk(text="b", token_ids=[2], finish_reason="length")

    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=serve, args=(listener, generate), daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}{ROUTE.decode()}"
    with httpx.Client(timeout=10) as client:
        with pytest.raises(httpx.RemoteProtocolError):  # the body ends unfinished
            with client.stream("POST", url, json={**CHAT, "max_tokens": 1}) as broken:
                list(broken.iter_lines())
        whole = client.post(url, json=CHAT).text
    assert whole.count('"content":') == 3 and whole.endswith("data: [DONE]\n\n")
