"""llama.cpp split by layers over ggml RPC across real `skulk run` processes on 127.0.0.1:
the head (rank 0) runs the bundled GGUF and offloads the later layers to the other ranks'
device servers, reached over ggml RPC links that are TLS between members (inside llama.cpp's
own sockets: skulk.worker.rpc_channel).

Greedy output must be byte-identical to one node's: the same kernels compute every layer,
wherever it sits. Bounded: short replies, one instance at a time, every wait has a deadline.
"""

import json
import os
import signal
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from skulk.client import Client
from tests.node_process import NodeProcess, meshed_nodes

pytestmark = pytest.mark.integration

MODEL = "smollm2-135m"
PROMPTS = ["What is the capital of France?", "Write a haiku about rivers."]
MOST_TOKENS = 16
READY_SECONDS = 180.0


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[NodeProcess]]:
    with meshed_nodes(tmp_path_factory.mktemp("rpc-trio"), 3, "--no-auto-place") as nodes:
        nodes[0].wait_until(lambda: _fully_observed(nodes[0], 3), 60.0,
                            "three nodes that observe each other")
        yield nodes


def _fully_observed(node: NodeProcess, count: int) -> bool:
    alive = [n for n in node.cluster()["nodes"] if n["alive"] and n["has_worker"]]
    return len(alive) == count and all(
        len(n.get("reachable_peers", [])) == count - 1 for n in alive)


def _place(node: NodeProcess, **fields: Any) -> dict[str, Any]:
    placed = httpx.post(f"{node.url}/place_instance", timeout=60,
                        json={"model_id": MODEL, "engine": "llama_cpp", **fields})
    assert placed.status_code == 201, placed.text
    return node.wait_instance_ready(placed.json()["instance_id"], READY_SECONDS)


def _delete(node: NodeProcess, instance_id: str) -> None:
    assert httpx.delete(f"{node.url}/instance/{instance_id}", timeout=30).status_code < 300
    node.wait_until(lambda: not node.state()["instances"], 60.0, "the instance to go")


def _client(node: NodeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", timeout=120)


def _greedy(node: NodeProcess, prompt: str, *, stream: bool = False) -> str:
    messages: Any = [{"role": "user", "content": prompt}]
    client = _client(node)
    if not stream:
        reply = client.chat.completions.create(model=MODEL, messages=messages,
                                               max_tokens=MOST_TOKENS, temperature=0)
        return reply.choices[0].message.content or ""
    parts = client.chat.completions.create(model=MODEL, messages=messages,
                                           max_tokens=MOST_TOKENS, temperature=0,
                                           stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in parts if chunk.choices)


def test_two_and_three_rank_splits_say_exactly_what_one_node_says(
        trio: list[NodeProcess]) -> None:
    api = trio[0]
    whole = _place(api, min_nodes=1)
    expected = [_greedy(api, prompt) for prompt in PROMPTS]
    assert all(expected)
    _delete(api, whole["instance_id"])
    for width in (2, 3):
        split = _place(api, min_nodes=width, sharding="pipeline")
        ranks = sorted(split["ranks"], key=lambda r: r["rank"])
        assert split["engine"] == "llama_cpp" and len({r["node_id"] for r in ranks}) == width
        assert ranks[0]["start_layer"] == 0 and ranks[-1]["end_layer"] == 30
        assert all(a["end_layer"] == b["start_layer"]
                   for a, b in zip(ranks, ranks[1:], strict=False))
        other = trio[width - 1]  # a node other than the head's may take the request
        assert [_greedy(other, p) for p in PROMPTS] == expected, \
            f"a {width}-rank llama.cpp pipeline changed the greedy output"
        assert [_greedy(api, p, stream=True) for p in PROMPTS] == expected
        _delete(api, split["instance_id"])


def test_sessions_logprobs_json_and_embeddings_work_on_a_split_instance(
        trio: list[NodeProcess]) -> None:
    api = trio[0]
    split = _place(api, min_nodes=2, sharding="pipeline")
    try:
        with Client(api.url) as client, client.create_session(MODEL) as session:
            session.append(messages=[{"role": "user", "content": "Name a colour."}])
            first = session.generate(max_tokens=8)
            session.append(messages=[{"role": "user", "content": "And another one?"}])
            second = session.generate(max_tokens=8)
        assert first.cached_tokens < first.prompt_tokens and second.text
        assert second.cached_tokens >= first.prompt_tokens, second

        openai_client = _client(api)
        scored = openai_client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Say yes."}], max_tokens=4,
            temperature=0, logprobs=True, top_logprobs=3)
        assert scored.choices[0].logprobs is not None
        [*tokens] = scored.choices[0].logprobs.content or []
        assert tokens and all(len(t.top_logprobs) == 3 and t.logprob <= 0 for t in tokens)

        constrained = openai_client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "A JSON object with a name."}],
            max_tokens=24, temperature=0, response_format={"type": "json_object"})
        assert (constrained.choices[0].message.content or "").lstrip().startswith("{")

        vectors = openai_client.embeddings.create(model=MODEL, input=["rivers", "mountains"])
        assert len(vectors.data) == 2 and len(vectors.data[0].embedding) == 576
    finally:
        _delete(api, split["instance_id"])


def test_the_device_server_admits_no_stranger_and_a_dead_rank_is_placed_again(
        trio: list[NodeProcess]) -> None:
    api = trio[0]
    split = _place(api, min_nodes=2, sharding="pipeline")
    device = next(r for r in split["ranks"] if r["rank"] == 1)
    node = next(n for n in trio if n.node_id() == device["node_id"])
    port = split["ring_port"] + 1
    with socket.create_connection(("127.0.0.1", port), timeout=5) as stranger:
        stranger.sendall(b"\x0e" + bytes(32))  # a ggml RPC hello without TLS
        try:
            answer = stranger.recv(64)
        except (ConnectionResetError, TimeoutError):
            # The server serves one client at a time, the head now: a stranger waits to
            # be accepted, and is then refused by its handshake.
            answer = b""
        assert not answer or answer[0] == 0x15, f"at most a TLS alert, not ggml: {answer!r}"

    [device_runner] = node.runner_pids()
    lines: list[str] = []
    with httpx.stream("POST", f"{api.url}/v1/chat/completions", timeout=120, json={
            "model": MODEL, "stream": True, "max_tokens": 200, "temperature": 0,
            "messages": [{"role": "user", "content": "Count from one to fifty."}]}) as reply:
        for line in reply.iter_lines():
            lines.append(line)
            if sum(1 for seen in lines if seen.startswith("data:")) == 3:
                os.kill(device_runner, signal.SIGKILL)
    assert not any('"error"' in line for line in lines), \
        "a rank dying mid-answer costs a pause (failover), not the answer"
    assert "data: [DONE]" in lines, "the stream ran to its end"
    pieces = [json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
              for line in lines if line.startswith("data: {")]
    before = "".join(pieces[:3])
    assert before and "".join(pieces).startswith(before) and len("".join(pieces)) > len(before)

    def serving_again() -> bool:
        instances = [i for i in api.state()["instances"] if i != split["instance_id"]]
        return bool(instances) and api.get(f"/instance/{instances[0]}").json()[
            "status"] == "ready"
    api.wait_until(serving_again, READY_SECONDS, "the instance to be placed again and serve")
    assert _greedy(api, PROMPTS[0])
    for instance_id in api.state()["instances"]:
        _delete(api, instance_id)


def test_a_model_no_node_can_hold_is_split_by_the_first_request_for_it(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two machines that lend models 0.7 GiB each (the bundled model needs ~0.78 GiB
    whole, ~0.64 GiB per half): the first chat request places it split across both."""
    root = tmp_path_factory.mktemp("rpc-pair")
    with meshed_nodes(root, 2, "--memory-limit", "0.7") as (a, b):
        a.wait_until(lambda: _fully_observed(a, 2), 60.0, "two nodes that observe each other")
        text = _greedy(b, PROMPTS[0])
        assert text
        [instance] = a.state()["instances"].values()
        assert instance["engine"] == "llama_cpp" and len(instance["shards"]) == 2
        assert {s["node_id"] for s in instance["shards"].values()} == {a.node_id(), b.node_id()}
