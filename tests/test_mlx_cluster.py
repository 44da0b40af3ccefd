"""The MLX engine across real `skulk run` processes on 127.0.0.1: the bundled model imported
for MLX on first use, whole and split by layers over two and three nodes, serving through
the ordinary chat API (by heads: tests/test_mlx_heads_cluster.py, on a trio of its own, so
the two run side by side on pytest-xdist's workers).

Greedy output must be byte-identical between one node and every pipeline split: exactly one
rank decides each token, so the split cannot change what the model says. Bounded: short
replies, one instance at a time, every wait has a deadline. Each shape is placed once: the
tests run in this order, each serving through the instance the one before it left.
"""

import json
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.chrome_trace import validate_chrome_trace
from tests.mlx_forced_tools import forced_tools_json_schemas_and_ollama_format
from tests.mlx_placing import (
    PROMPTS,
    READY_SECONDS,
    delete,
    greedy,
    placement_of,
    ready_instance,
    served_by,
    split_away_from,
)
from tests.node_process import NodeProcess

pytestmark = pytest.mark.integration


def test_forced_tools_json_schemas_and_ollama_format_whole(
        trio: list[NodeProcess], whole_embeddings: list[list[float]]) -> None:
    api = trio[0]
    ready_instance(api, placement_of(api, "whole"))
    forced_tools_json_schemas_and_ollama_format(api, "whole", whole_embeddings)
    # Left placed: the pipeline test takes its reference answers from it.


def test_pipeline_splits_say_exactly_what_one_node_says(trio: list[NodeProcess]) -> None:
    api = trio[0]
    whole = ready_instance(api, placement_of(api, "whole"))
    assert whole["engine"] == "mlx" and len(whole["ranks"]) == 1
    expected = [greedy(api, prompt) for prompt in PROMPTS]
    delete(api, whole["instance_id"])
    # Three nodes, then two away from the API's node, left placed: the forced-tools test by
    # layers and the failover tests after it serve through that one.
    for placement in ({"min_nodes": 3, "sharding": "pipeline"}, placement_of(api, "layers")):
        width = placement["min_nodes"]
        split, texts = served_by(api, **placement)
        ranks = sorted(split["ranks"], key=lambda r: r["rank"])
        assert len({r["node_id"] for r in ranks}) == width
        assert ranks[0]["start_layer"] == 0 and ranks[-1]["end_layer"] == 30
        assert all(a["end_layer"] == b["start_layer"]
                   for a, b in zip(ranks, ranks[1:], strict=False))
        assert texts == expected, f"{width}-node pipeline changed the greedy output"
        if width == 2:
            last = next(n for n in trio if n.node_id() == ranks[-1]["node_id"])
            _concurrent_requests_match_their_solo_output(last, expected)
            _a_trace_shows_both_ranks_and_their_hops(last, ranks)
        else:
            delete(api, split["instance_id"])


def _concurrent_requests_match_their_solo_output(node: NodeProcess,
                                                 expected: list[str]) -> None:
    prompts = PROMPTS * 4  # eight requests at once, on a node that holds no rank 0
    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        texts = list(pool.map(lambda p: greedy(node, p), prompts))
    assert texts == expected * 4


def _a_trace_shows_both_ranks_and_their_hops(node: NodeProcess,
                                             ranks: list[dict[str, Any]]) -> None:
    assert httpx.post(f"{node.url}/v1/tracing", json={"enabled": True}).status_code == 200
    try:
        greedy(node, PROMPTS[0])
    finally:
        httpx.post(f"{node.url}/v1/tracing", json={"enabled": False})
    [summary] = node.get("/v1/traces").json()["traces"]
    path = f"/v1/traces/{summary['trace_id']}"

    def every_rank_reported() -> bool:  # other ranks' spans come on their own
        spans = node.get(f"{path}/raw").json()["spans"]
        return {(s["node_id"], s["rank"]) for s in spans if s["name"] == "runner.work"} == {
            (r["node_id"], r["rank"]) for r in ranks if r["rank"] != 0}
    node.wait_until(every_rank_reported, 60.0, "spans from every rank")
    document = node.get(path).json()
    validate_chrome_trace(document)
    events = document["traceEvents"]
    processes = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert {f"{r['node_id']} rank {r['rank']}" for r in ranks} <= processes
    hops = {(e["args"]["rank"], e["name"]) for e in events
            if e["ph"] == "X" and e["cat"] == "pipeline"}
    assert {(0, "pipeline.send"), (1, "pipeline.recv")} <= hops, hops


def test_forced_tools_json_schemas_and_ollama_format_by_layers(
        trio: list[NodeProcess], whole_embeddings: list[list[float]]) -> None:
    api = trio[0]
    ready_instance(api, placement_of(api, "layers"))  # the pipeline test's
    forced_tools_json_schemas_and_ollama_format(api, "layers", whole_embeddings)


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
    assert greedy(api, PROMPTS[0])


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
