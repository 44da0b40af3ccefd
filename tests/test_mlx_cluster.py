"""The MLX engine across real `skulk run` processes on 127.0.0.1: the bundled model imported
for MLX on first use, split by layers over one, two and three nodes, and by heads over
three, serving through the ordinary chat API.

Greedy output must be byte-identical between one node and every pipeline split: exactly one
rank decides each token, so the split cannot change what the model says. Bounded: short
replies, one instance at a time, every wait has a deadline.
"""

import functools
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import ollama
import openai
import pytest
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
)
from openai.types.shared_params import ResponseFormatJSONSchema

from skulk.testing.function_schemas import function_schemas, validate_answer
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.corruption_guard import INJECT_NAN_VARIABLE
from tests.chrome_trace import validate_chrome_trace
from tests.mlx_placing import (
    READY_SECONDS,
    delete,
    place,
    ready_instance,
    split_away_from,
)
from tests.node_process import NodeProcess
from tests.speculative_support import import_models, seed_store
from tests.test_dialects import anthropic_tool_use_turn

pytestmark = pytest.mark.integration

PROMPTS = ["What is the capital of France?", "Write a haiku about rivers."]
MOST_TOKENS = 12


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory,
         mlx_models: Path) -> Iterator[list[NodeProcess]]:
    root = tmp_path_factory.mktemp("mlx-trio")
    # B and C hold the session's imports (fp32, and the 4-bit copy the card drafts with);
    # A imports both on first use, as a real node does.
    imported = import_models(mlx_models)
    for name in ("b", "c"):
        seed_store(root / name, *imported)
    namespace = f"mlx-trio-{time.monotonic_ns()}"
    authority = root / "authority"
    first = NodeProcess(root / "a", "--namespace", namespace, "--no-auto-place",
                        authority=authority)
    others = [NodeProcess(root / name, "--namespace", namespace, "--no-auto-place",
                          "--peer", f"tcp/127.0.0.1:{first.transport_port}",
                          authority=authority)
              for name in ("b", "c")]
    nodes = [first, *others]
    try:
        # Every rank may corrupt one hop when the test writes its rank into this file.
        os.environ[INJECT_NAN_VARIABLE] = str(root / "inject-nan")
        try:
            for node in nodes:
                node.start()
        finally:
            del os.environ[INJECT_NAN_VARIABLE]
        first.wait_until(lambda: _fully_observed(first, 3), 60.0,
                         "three nodes that observe each other")
        yield nodes
    finally:
        for node in nodes:
            if node.process is not None and node.process.poll() is None:
                node.stop()


def _fully_observed(node: NodeProcess, count: int) -> bool:
    summary = node.cluster()
    alive = [n for n in summary["nodes"] if n["alive"] and n["has_worker"]]
    return len(alive) == count and all(
        len(n.get("reachable_peers", [])) == count - 1 for n in alive)


def _greedy(node: NodeProcess, prompt: str) -> str:
    reply = httpx.post(f"{node.url}/v1/chat/completions", timeout=180, json={
        "model": "smollm2-135m", "max_tokens": MOST_TOKENS, "temperature": 0,
        "messages": [{"role": "user", "content": prompt}]})
    assert reply.status_code == 200, reply.text
    text: str = reply.json()["choices"][0]["message"]["content"]
    assert text
    return text


def _served_by(node: NodeProcess, **placement: Any) -> tuple[dict[str, Any], list[str]]:
    placed = place(node, **placement)
    assert placed.status_code == 201, placed.text
    instance = node.wait_instance_ready(placed.json()["instance_id"], READY_SECONDS)
    return instance, [_greedy(node, prompt) for prompt in PROMPTS]


def test_pipeline_splits_say_exactly_what_one_node_says(trio: list[NodeProcess]) -> None:
    api = trio[0]
    whole, expected = _served_by(api, min_nodes=1)
    assert whole["engine"] == "mlx" and len(whole["ranks"]) == 1
    delete(api, whole["instance_id"])
    for width in (2, 3):
        split, texts = _served_by(api, min_nodes=width, sharding="pipeline")
        ranks = sorted(split["ranks"], key=lambda r: r["rank"])
        assert len({r["node_id"] for r in ranks}) == width
        assert ranks[0]["start_layer"] == 0 and ranks[-1]["end_layer"] == 30
        assert all(a["end_layer"] == b["start_layer"]
                   for a, b in zip(ranks, ranks[1:], strict=False))
        assert texts == expected, f"{width}-node pipeline changed the greedy output"
        if width == 2:
            _concurrent_requests_match_their_solo_output(trio[1], expected)
            _a_trace_shows_both_ranks_and_their_hops(trio[1], ranks)
        delete(api, split["instance_id"])


def _concurrent_requests_match_their_solo_output(node: NodeProcess,
                                                 expected: list[str]) -> None:
    prompts = PROMPTS * 4  # eight requests at once, on a node that holds no rank 0
    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        texts = list(pool.map(lambda p: _greedy(node, p), prompts))
    assert texts == expected * 4


def _a_trace_shows_both_ranks_and_their_hops(node: NodeProcess,
                                             ranks: list[dict[str, Any]]) -> None:
    assert httpx.post(f"{node.url}/v1/tracing", json={"enabled": True}).status_code == 200
    try:
        _greedy(node, PROMPTS[0])
    finally:
        httpx.post(f"{node.url}/v1/tracing", json={"enabled": False})
    [summary] = node.get("/v1/traces").json()["traces"]
    path = f"/v1/traces/{summary['trace_id']}"

    def every_rank_reported() -> bool:  # other ranks' spans come on their own
        spans = node.get(f"{path}/raw").json()["spans"]
        return {(s["node_id"], s["rank"]) for s in spans if s["name"] == "runner.work"} == {
            (r["node_id"], r["rank"]) for r in ranks if r["rank"] != 0}
    node.wait_until(every_rank_reported, 20.0, "spans from every rank")
    document = node.get(path).json()
    validate_chrome_trace(document)
    events = document["traceEvents"]
    processes = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert {f"{r['node_id']} rank {r['rank']}" for r in ranks} <= processes
    hops = {(e["args"]["rank"], e["name"]) for e in events
            if e["ph"] == "X" and e["cat"] == "pipeline"}
    assert {(0, "pipeline.send"), (1, "pipeline.recv")} <= hops, hops


def test_tensor_split_two_way_is_refused_and_says_why(trio: list[NodeProcess]) -> None:
    # SmolLM2 has 9 query and 3 KV heads: two nodes cannot share them evenly
    refused = place(trio[0], min_nodes=2, sharding="tensor",
                     excluded_nodes=[trio[2].node_id()])
    assert refused.status_code == 400, refused.text
    assert "do not divide by 2" in refused.text
    previews = trio[0].get("/instance/previews?model_id=smollm2-135m").json()
    two_way = [p for p in previews["previews"] if p["sharding"] == "tensor"
               and p["engine"] == "mlx" and p["width"] == 2]
    assert two_way and all("do not divide by 2" in (p["reason"] or "") for p in two_way)


def test_previews_predict_speeds_and_speed_places_the_fastest(
        trio: list[NodeProcess]) -> None:
    previews = trio[0].get("/instance/previews?model_id=smollm2-135m").json()["previews"]
    mlx = {(p["sharding"], p["width"]): p for p in previews if p["engine"] == "mlx"}
    whole, layers, heads = mlx["pipeline", 1], mlx["pipeline", 2], mlx["tensor", 3]
    assert whole["predicted_decode_tps"] > layers["predicted_decode_tps"] > 0
    # The nodes measured their memory and observed each other: only the rate is assumed.
    assert heads["prediction_assumes"] == ["gigabit links"]
    placed = place(trio[0], prefer="speed")
    assert placed.status_code == 201, placed.text
    fastest = max((p for p in previews if p["fits"]), key=lambda p: p["predicted_decode_tps"])
    instance = placed.json()
    assert (instance["sharding"], len(instance["ranks"])) == (fastest["sharding"],
                                                              fastest["width"])
    delete(trio[0], instance["instance_id"])


def test_tensor_split_three_way_serves(trio: list[NodeProcess]) -> None:
    instance, texts = _served_by(trio[0], min_nodes=3, sharding="tensor")
    assert len(instance["ranks"]) == 3 and instance["sharding"] == "tensor"
    assert all(t.strip() for t in texts)
    # Left placed: the forced-tools test by heads serves through it.


# Heads first: it serves through the instance the three-way test left; layers last, on the
# two nodes other than the API's: the failover test after it serves through that one. Each
# shape is placed once in this module, not once per test (a placement is a runner start, a
# load and a warm-up on every rank).
SHAPES: dict[str, dict[str, Any]] = {"heads": {"min_nodes": 3, "sharding": "tensor"},
                                     "whole": {"min_nodes": 1},
                                     "layers": {"min_nodes": 2, "sharding": "pipeline"}}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_forced_tools_json_schemas_and_ollama_format_whole_and_split(
        trio: list[NodeProcess], shape: str, whole_embeddings: list[list[float]]) -> None:
    api = trio[0]
    placement = SHAPES[shape] if shape != "layers" else {
        **SHAPES[shape], "excluded_nodes": [api.node_id()]}
    ready_instance(api, placement)
    schemas = function_schemas()
    # One failed check waits for the others to end; by heads on a loaded 2-core machine
    # every token is 60 all-reduces among three starved processes (one answer took over
    # 180 s in a fresh-clone run beside other tests).
    client = openai.OpenAI(base_url=f"{api.url}/v1", api_key="unused", max_retries=0,
                           timeout=420)
    ask: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "What is the weather in Paris?"}]
    tools: list[ChatCompletionFunctionToolParam] = [
        {"type": "function", "function": {"name": name, "parameters": schemas[name],
                                          "description": f"{name} with its arguments"}}
        for name in ("get_weather", "book_flight")]
    choices: list[ChatCompletionToolChoiceOptionParam] = [
        "required", {"type": "function", "function": {"name": "book_flight"}}]

    def forced_call(choice: ChatCompletionToolChoiceOptionParam) -> None:
        reply = client.chat.completions.create(
            model="smollm2-135m", messages=ask, tools=tools, tool_choice=choice,
            max_tokens=64, temperature=0)
        [call] = reply.choices[0].message.tool_calls or []
        assert call.type == "function" and call.function.name in schemas
        validate_answer(schemas[call.function.name], call.function.arguments)

    def json_schema_answer() -> None:
        answer = client.chat.completions.create(
            model="smollm2-135m", messages=ask, max_tokens=64, temperature=0,
            response_format=ResponseFormatJSONSchema(type="json_schema", json_schema={
                "name": "contact", "schema": schemas["update_contact"]}))
        validate_answer(schemas["update_contact"], answer.choices[0].message.content or "")

    def ollama_format() -> None:
        chat = ollama.Client(host=api.url).chat(
            model="smollm2-135m", messages=ask, format=schemas["set_thermostat"],
            options={"temperature": 0, "num_predict": 64})
        validate_answer(schemas["set_thermostat"], chat.message.content or "")

    def embeddings_match_the_whole_model() -> None:
        embedded = client.embeddings.create(model="smollm2-135m", input=EMBEDDED)
        got = np.array([item.embedding for item in embedded.data])
        assert np.allclose(got, np.array(whole_embeddings), atol=2e-4), shape

    # Sent at once, as independent clients would: the engine decodes them in one batch
    # (one after another they cost a split's per-token hops or all-reduces each).
    checks: list[Callable[[], None]] = [
        *(functools.partial(forced_call, choice) for choice in choices),
        json_schema_answer, ollama_format, functools.partial(anthropic_tool_use_turn, api),
        functools.partial(_greedy_logprobs_are_the_likeliest_tokens, client, ask),
        embeddings_match_the_whole_model]
    with ThreadPoolExecutor(max_workers=len(checks)) as pool:
        for running in [pool.submit(check) for check in checks]:
            running.result()  # each check's own assertion error, if it failed


EMBEDDED = ["The capital of France is Paris.", "Rivers run to the sea."]


@pytest.fixture(scope="module")
def whole_embeddings(mlx_models: Path) -> list[list[float]]:
    """The vectors the whole model gives in this process (the nodes' copy of it)."""
    model_dir = import_models(mlx_models)[0]
    tokenizer = mlx_api.load_tokenizer(model_dir)
    model = mlx_api.load_model(model_dir)
    vectors = [model.mean_pooled(tokenizer.encode(text, add_special_tokens=True))
               for text in EMBEDDED]
    assert all(vector is not None for vector in vectors)
    return [vector for vector in vectors if vector is not None]


def _greedy_logprobs_are_the_likeliest_tokens(client: openai.OpenAI,
                                              ask: list[ChatCompletionMessageParam]) -> None:
    """Whole, by heads (rank 0 decides) or by layers (the last rank decides and carries
    them back): a greedy token is its step's likeliest, and the entries spell the text."""
    scored = client.chat.completions.create(
        model="smollm2-135m", messages=ask, max_tokens=4, temperature=0, logprobs=True,
        top_logprobs=2)
    choice = scored.choices[0]
    entries = choice.logprobs.content if choice.logprobs is not None else None
    assert entries is not None and len(entries) == 4
    assert "".join(e.token for e in entries) == choice.message.content
    for entry in entries:
        assert len(entry.top_logprobs) == 2 and entry.logprob <= 0
        best = entry.top_logprobs[0]
        assert best.token == entry.token and abs(best.logprob - entry.logprob) < 1e-4
        assert entry.top_logprobs[1].logprob <= best.logprob


def test_killing_a_rank_mid_stream_fails_over_with_the_same_greedy_text(
        trio: list[NodeProcess]) -> None:
    api = trio[0]
    # The forced-tools test by layers leaves one of this shape.
    instance = ready_instance(api, {"min_nodes": 2, "excluded_nodes": [api.node_id()]})
    by_id = {n.node_id(): n for n in trio}
    last_rank = max(instance["ranks"], key=lambda r: r["rank"])
    victim = by_id[last_rank["node_id"]]
    # 32 tokens, as below: the rank dies after 3 with most of them still to come, and each
    # token costs a pipeline hop (200 made this test's two generations minutes long).
    body = {"model": "smollm2-135m", "max_tokens": 32, "temperature": 0,
            "messages": [{"role": "user", "content": "Count from one to one hundred."}]}
    whole = httpx.post(f"{api.url}/v1/chat/completions", json=body, timeout=180)
    expected = whole.json()["choices"][0]["message"]["content"]
    # An earlier test's deleted instance may still have its runner shutting down there:
    # this instance's runner is the victim's newest.
    victim_pid = victim.newest_runner_pid()
    parts: list[str] = []
    errors: list[str] = []
    with httpx.stream("POST", f"{api.url}/v1/chat/completions", json={**body, "stream": True},
                      timeout=READY_SECONDS) as response:
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            event = json.loads(line.removeprefix("data: "))
            if "error" in event:
                errors.append(line)
            elif event["choices"] and event["choices"][0]["delta"].get("content"):
                parts.append(event["choices"][0]["delta"]["content"])
                if len(parts) == 3:
                    os.kill(victim_pid, signal.SIGKILL)
    assert errors == [] and "".join(parts) == expected
    assert 'skulk_failovers_total{reason="runner_failed"} 1.0' in api.get("/metrics").text

    def replaced() -> bool:
        instances = api.state()["instances"]
        return bool(instances) and instance["instance_id"] not in instances
    api.wait_until(replaced, 120.0, "the instance to be placed again")
    for new_id in api.state()["instances"]:
        api.wait_instance_ready(new_id, READY_SECONDS)
    assert _greedy(api, PROMPTS[0])


def test_a_rank_sending_nan_fails_over_as_pipeline_corrupt_with_the_same_greedy_text(
        trio: list[NodeProcess]) -> None:
    api = trio[0]
    instance = split_away_from(api)
    trigger = api.data_dir.parent / "inject-nan"  # the trio's INJECT_NAN_VARIABLE
    body = {"model": "smollm2-135m", "max_tokens": 32, "temperature": 0,
            "messages": [{"role": "user", "content": "Name the planets of the solar system."}]}
    whole = httpx.post(f"{api.url}/v1/chat/completions", json=body, timeout=180)
    expected = whole.json()["choices"][0]["message"]["content"]
    parts: list[str] = []
    errors: list[str] = []
    with httpx.stream("POST", f"{api.url}/v1/chat/completions", json={**body, "stream": True},
                      timeout=READY_SECONDS) as response:
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            event = json.loads(line.removeprefix("data: "))
            if "error" in event:
                errors.append(line)
            elif event["choices"] and event["choices"][0]["delta"].get("content"):
                parts.append(event["choices"][0]["delta"]["content"])
                if len(parts) == 3:
                    trigger.write_text("0")  # rank 0's next hop carries NaN
    assert not trigger.exists(), "no rank corrupted a hop"
    assert errors == [] and "".join(parts) == expected
    metrics = api.get("/metrics").text
    assert 'skulk_failovers_total{reason="pipeline_corrupt"} 1.0' in metrics
    assert instance["instance_id"] not in api.state()["instances"]
