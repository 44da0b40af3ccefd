"""The native byte path seen by real clients: a node whose relay writes a stream's plain
tokens and one with `--no-native-stream` (every token through the node's Python) give the
`openai` client the same text, ending and usage, and every event on the wire is the one
the Python path renders for its text, in HTTP/1.1 chunks as uvicorn frames them."""

import json
import socket
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from skulk.api.adapters.anthropic_messages import event as anthropic_event
from skulk.api.adapters.openai_chat import chunk_body
from skulk.api.adapters.openai_completions import completion_body
from skulk.api.consume import sse
from skulk.api.text_event import TextEvent
from tests.node_process import NodeProcess

PROMPTS = ["Name three colours of the rainbow.",
           'Write "hello" in French, Japanese and with an emoji, then a backslash: \\']


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, NodeProcess]]:
    """The same model served with the relay (native) and without it (python)."""
    started: dict[str, NodeProcess] = {}
    try:
        for name, flags in (("native", []), ("python", ["--no-native-stream"])):
            node = NodeProcess(tmp_path_factory.mktemp(name), "--serve", "smollm2-135m",
                               *flags)
            started[name] = node.start()
        for node in started.values():
            node.wait_model_ready()
        yield started
    finally:
        for node in started.values():
            node.stop()


def relayed_tokens(node: NodeProcess) -> float:
    return node.metric("skulk_native_stream_tokens_total")


def streamed(node: NodeProcess, prompt: str) -> tuple[str, str | None, object]:
    client = openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", max_retries=0)
    text, finish, usage = [], None, None
    for chunk in client.chat.completions.create(
            model="smollm2-135m", messages=[{"role": "user", "content": prompt}],
            max_tokens=40, temperature=0, stream=True,
            stream_options={"include_usage": True}):
        if chunk.choices:
            text.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
        usage = chunk.usage or usage
    return "".join(text), finish, usage


def test_the_openai_client_reads_the_same_reply_with_the_relay_and_without(
        nodes: dict[str, NodeProcess]) -> None:
    before = {name: relayed_tokens(node) for name, node in nodes.items()}
    for prompt in PROMPTS:
        native, python = streamed(nodes["native"], prompt), streamed(nodes["python"], prompt)
        assert native == python
        assert native[0] and native[2] is not None
    assert relayed_tokens(nodes["python"]) == before["python"] == 0
    # Each reply's first token and its last chunk go through Python; the rest, here.
    assert relayed_tokens(nodes["native"]) - before["native"] >= 20 * len(PROMPTS)


def recorded(node: NodeProcess) -> list[tuple[str, str]]:
    """The node's runner's flight recorder: what and detail, oldest first."""
    [runner] = httpx.get(f"{node.url}/v1/diagnostics/node", timeout=10).json()["runners"]
    return [(entry["what"], entry["detail"]) for entry in runner["flight_recorder"]]


def test_the_runner_hears_that_each_first_token_went_out(
        nodes: dict[str, NodeProcess]) -> None:
    """Streamed or not, a request on the node that serves it tells its runner when its
    first token is out (the runner may wait for that: `first_token_pause`)."""
    node = nodes["native"]
    before = {detail for what, detail in recorded(node) if what == "task_started"}
    streamed(node, PROMPTS[0])
    openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", max_retries=0) \
        .chat.completions.create(model="smollm2-135m", max_tokens=8,
                                 messages=[{"role": "user", "content": PROMPTS[1]}])
    after = recorded(node)
    started = {detail for what, detail in after if what == "task_started"} - before
    assert len(started) == 2
    assert started <= {detail for what, detail in after if what == "first_token_out"}


def raw_reply(node: NodeProcess, prompt: str, max_tokens: int = 40,
              read_after: float = 0.0, path: str = "/v1/chat/completions") -> bytes:
    """The response's body as it crossed the socket, still in HTTP/1.1 chunks; with
    `read_after`, a client with a small receive buffer that reads nothing for that long
    (the node's socket fills up)."""
    request: dict[str, object] = {"model": "smollm2-135m", "stream": True,
                                  "max_tokens": max_tokens, "temperature": 0}
    if path == "/v1/completions":
        request["prompt"] = prompt
    else:
        request["messages"] = [{"role": "user", "content": prompt}]
    if path == "/v1/chat/completions":
        request["stream_options"] = {"include_usage": True}
    body = json.dumps(request).encode()
    host, port = node.url.removeprefix("http://").split(":")
    with socket.socket() as connection:
        if read_after:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        connection.settimeout(60)
        connection.connect((host, int(port)))
        connection.sendall(b"POST %s HTTP/1.1\r\nhost: test\r\n" % path.encode() +
                           b"x-api-key: unused\r\nanthropic-version: 2023-06-01\r\n"
                           b"content-type: application/json\r\ncontent-length: %d\r\n\r\n"
                           % len(body) + body)
        time.sleep(read_after)
        raw = b""
        while not raw.endswith(b"\r\n0\r\n\r\n"):
            part = connection.recv(1 << 16)
            assert part, "the node closed the connection before the last chunk"
            raw += part
    head, _, chunked = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    return chunked


def events(chunked: bytes) -> list[bytes]:
    """Each HTTP/1.1 chunk's bytes, checked to be framed as uvicorn frames them."""
    found: list[bytes] = []
    at = 0
    while True:
        size_end = chunked.index(b"\r\n", at)
        size = int(chunked[at:size_end], 16)
        assert chunked[at:size_end] == b"%x" % size
        if size == 0:
            return found
        found.append(chunked[size_end + 2:size_end + 2 + size])
        assert chunked[size_end + 2 + size:size_end + 4 + size] == b"\r\n"
        at = size_end + 4 + size


def content_event(completion_id: str, created: int, model: str) -> TextEvent:
    """The chat stream's token event, as the Python path renders it."""
    return TextEvent(lambda text: sse(chunk_body(completion_id, created, model,
                                                 {"content": text})))


def test_every_event_on_the_wire_is_the_python_paths(nodes: dict[str, NodeProcess]) -> None:
    replies = {name: events(raw_reply(node, PROMPTS[1])) for name, node in nodes.items()}
    assert same_text_in_pythons_events(replies) > 10


def test_a_client_that_reads_late_gets_the_same_text(nodes: dict[str, NodeProcess]) -> None:
    """Its socket fills: the relay keeps what it cannot send and Python sends it, after
    the end of any event the socket took only in part (the Python path waits instead)."""
    replies = {name: events(raw_reply(node, "Count from 1 to 300, separated by commas.",
                                      max_tokens=400, read_after=4.0))
               for name, node in nodes.items()}
    assert same_text_in_pythons_events(replies) > 0


def same_text_in_pythons_events(replies: dict[str, list[bytes]]) -> int:
    """Check every token event is byte for byte the Python path's and the replies'
    texts agree; returns how many token events the native reply had."""
    texts, counts = {}, {}
    for name, reply in replies.items():
        first = json.loads(reply[0].removeprefix(b"data: "))
        content = content_event(first["id"], first["created"], first["model"])
        pieces = []
        for event in reply[1:]:
            body = json.loads(event.removeprefix(b"data: ")) if event.startswith(
                b"data: {") else None
            if body and body["choices"] and body["choices"][0]["delta"].get("content"):
                text = body["choices"][0]["delta"]["content"]
                assert event == content(text), "a token's event is byte for byte Python's"
                pieces.append(text)
        assert reply[-1] == b"data: [DONE]\n\n"
        texts[name], counts[name] = "".join(pieces), len(pieces)
    assert texts["native"] == texts["python"]
    return counts["native"]



def test_the_other_dialects_events_are_pythons_too(nodes: dict[str, NodeProcess]) -> None:
    """The legacy completions and Anthropic's messages hand their plain tokens to the
    relay as the chat stream does, each as its own dialect's event."""
    delta = TextEvent(lambda text: anthropic_event("content_block_delta", {
        "index": 0, "delta": {"type": "text_delta", "text": text}}))
    for path in ("/v1/completions", "/v1/messages"):
        texts = {}
        relayed = relayed_tokens(nodes["native"])
        for name, node in nodes.items():
            reply = events(raw_reply(node, PROMPTS[1], path=path))
            pieces = []
            for event in reply:
                if path == "/v1/messages":
                    if not event.startswith(b"event: content_block_delta\n"):
                        continue
                    text = json.loads(event.partition(b"data: ")[2])["delta"]["text"]
                    assert event == delta(text)
                elif event.startswith(b"data: {"):
                    body = json.loads(event.removeprefix(b"data: "))
                    text = body["choices"][0]["text"]
                    if body["choices"][0]["finish_reason"] is None:  # a plain token's
                        assert event == sse(completion_body(
                            body["id"], body["created"], body["model"], text, None, None))
                else:
                    continue
                pieces.append(text)
            assert len([piece for piece in pieces if piece]) > 10, (path, name)
            texts[name] = "".join(pieces)
        assert texts["native"] == texts["python"], path
        assert relayed_tokens(nodes["native"]) - relayed >= 20, path
