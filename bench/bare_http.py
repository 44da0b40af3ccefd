"""The least an HTTP server can do around an engine: OpenAI chat chunks straight from the
engine's loop to the client's socket.

`bench/engine_alone.py --port` serves this way, so that the same `openai` client that
streams from Skulk and llama-server streams from the engine with nothing around it: no
node, no runner pipe, no relay, no framework; one thread that reads a request, then
writes each token's server-sent event to the socket as the engine yields it (HTTP/1.1
chunked, `TCP_NODELAY`, the head with the first event). What is left between it and a
server is that server's own serving path; what it costs against the engine counted
in-process is the client's and the socket's share, which every server pays too.

Only what the benchmark sends is understood: `POST /v1/chat/completions` with
`"stream": true`, its messages, `max_tokens` and greedy sampling; anything else gets a
JSON error. One request at a time, over any number of kept-alive connections.
"""

import contextlib
import json
import selectors
import socket
import sys
import time
from collections.abc import Callable, Iterator

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import ChatMessage, GenerationParams

MODEL = "engine-alone"
ROUTE = b"/v1/chat/completions"
_MOST_HEAD_BYTES = 64 * 1024

Generate = Callable[[GenerationParams], Iterator[TokenChunk]]


class BadRequest(Exception):
    """What the client sent that this server does not take (answered 400, then closed)."""


def read_request(connection: socket.socket, buffered: bytes) -> tuple[bytes, bytes, bytes] | None:
    """One request's target and body, and the bytes after it; None when the client closed
    the connection between requests."""
    while b"\r\n\r\n" not in buffered:
        if len(buffered) > _MOST_HEAD_BYTES:
            raise BadRequest("the request head is too long")
        data = connection.recv(65536)
        if not data:
            if buffered:
                raise BadRequest("the connection closed inside a request head")
            return None
        buffered += data
    head, rest = buffered.split(b"\r\n\r\n", 1)
    request_line, *header_lines = head.split(b"\r\n")
    parts = request_line.split(b" ")
    if len(parts) != 3:
        raise BadRequest(f"not an HTTP request line: {request_line[:80]!r}")
    length = 0
    for line in header_lines:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        data = connection.recv(65536)
        if not data:
            raise BadRequest("the connection closed inside a request body")
        rest += data
    return parts[1], rest[:length], rest[length:]


def params_of(target: bytes, body: bytes) -> GenerationParams:
    """The generation a benchmark request asks for; raises `BadRequest` for anything else."""
    if target != ROUTE:
        raise BadRequest(f"only POST {ROUTE.decode()} is served here")
    try:
        request = json.loads(body)
        messages = [ChatMessage(role=m["role"], content=m["content"])
                    for m in request["messages"]]
    except (ValueError, KeyError, TypeError) as error:
        raise BadRequest(f"the body is not a chat request: {error}") from error
    if request.get("stream") is not True:
        raise BadRequest("this server only streams: send \"stream\": true")
    return GenerationParams(model_id=ModelId(MODEL), messages=messages, temperature=0.0,
                            max_tokens=request.get("max_tokens"))


def chunked(payload: bytes) -> bytes:
    """One HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def event(delta: dict[str, object] | None, finish: str | None = None,
          usage: dict[str, int] | None = None) -> bytes:
    """One OpenAI chat chunk as a server-sent event (no delta: the usage chunk)."""
    body: dict[str, object] = {"id": "chatcmpl-bare", "object": "chat.completion.chunk",
                               "created": int(time.time()), "model": MODEL}
    body["choices"] = [] if delta is None else [
        {"index": 0, "delta": delta, "finish_reason": finish}]
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
        b"transfer-encoding: chunked\r\n\r\n")


def stream(connection: socket.socket, generate: Generate, params: GenerationParams) -> None:
    """The head and the role's event at once, then one event per piece of text as the
    engine yields it, then the ending, the usage and `[DONE]`. A request the engine
    refuses (it raises before its first chunk) is a `BadRequest`."""
    try:
        chunks = generate(params)
    except Exception as refused:  # the engine's refusal: too long, bad tokens
        raise BadRequest(str(refused)) from refused
    connection.sendall(HEAD + chunked(event({"role": "assistant", "content": ""})))
    pieces = 0
    finish = "stop"
    chunk: TokenChunk | None = None
    for chunk in chunks:
        if chunk.text:
            connection.sendall(chunked(event({"content": chunk.text})))
            pieces += 1
        if chunk.finish_reason is not None:
            finish = chunk.finish_reason
    prompt = 0 if chunk is None or chunk.usage is None else chunk.usage.prompt_tokens
    connection.sendall(chunked(event({}, finish)) + chunked(event(None, usage={
        "prompt_tokens": prompt, "completion_tokens": pieces,
        "total_tokens": prompt + pieces})) + chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n")


def refuse(connection: socket.socket, why: str) -> None:
    body = json.dumps({"error": {"message": why, "type": "invalid_request_error"}}).encode()
    connection.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                       b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))


def serve(listener: socket.socket, generate: Generate) -> None:
    """Answer requests on `listener` until the process ends, one at a time."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    buffers: dict[socket.socket, bytes] = {}
    while True:
        for key, _ in selector.select():
            ready = key.fileobj
            assert isinstance(ready, socket.socket)
            if ready is listener:
                connection, _ = listener.accept()
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                selector.register(connection, selectors.EVENT_READ)
                buffers[connection] = b""
                continue
            if not _answer(ready, generate, buffers):
                selector.unregister(ready)
                buffers.pop(ready, None)
                ready.close()


def _answer(connection: socket.socket, generate: Generate,
            buffers: dict[socket.socket, bytes]) -> bool:
    """One request on a readable connection; False when the connection is done."""
    try:
        request = read_request(connection, buffers[connection])
        if request is None:
            return False
        target, body, buffers[connection] = request
        stream(connection, generate, params_of(target, body))
        return True
    except BadRequest as why:
        with contextlib.suppress(OSError):  # the client may be gone already
            refuse(connection, str(why))
        return False
    except OSError:  # the client went away mid-answer (its request is cancelled)
        return False
    except Exception as failed:  # the engine failed mid-answer: the stream just ends
        print(f"bare_http: a request failed: {failed}", file=sys.stderr, flush=True)
        return False
