"""Operating a real node: Prometheus metrics after real requests, the OpenAPI document."""

import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families

from tests.chrome_trace import validate_chrome_trace
from tests.node_process import NodeProcess


def samples(node: NodeProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx.get(f"{node.url}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples}


def test_metrics_count_requests_tokens_and_latency(serving_node: NodeProcess) -> None:
    client = openai.OpenAI(base_url=f"{serving_node.url}/v1", api_key="x", max_retries=0)
    before = samples(serving_node)
    for _ in range(2):
        client.chat.completions.create(model="smollm2-135m", max_tokens=8,
                                       messages=[{"role": "user", "content": "Hi"}])
    httpx.post(f"{serving_node.url}/api/chat", json={"model": "nope", "messages": [
        {"role": "user", "content": "Hi"}]})
    after = samples(serving_node)

    def grew(name: str, labels: tuple[tuple[str, str], ...] = ()) -> float:
        return after.get((name, labels), 0.0) - before.get((name, labels), 0.0)

    ok = (("dialect", "openai"), ("route", "/v1/chat/completions"), ("status", "200"))
    assert grew("skulk_requests_total", ok) == 2
    missing = (("dialect", "ollama"), ("route", "/api/chat"), ("status", "404"))
    assert grew("skulk_requests_total", missing) == 1
    assert grew("skulk_tokens_generated_total") >= 2
    assert grew("skulk_time_to_first_token_seconds_count") == 2
    assert grew("skulk_inter_token_seconds_count") >= 2
    assert after[("skulk_is_master", ())] == 1 and after[("skulk_live_nodes", ())] == 1
    assert after[("skulk_elections_total", ())] >= 1
    assert after[("skulk_events_indexed_total", ())] > 0
    assert after[("skulk_instances", ())] == 1


def test_the_openapi_document_summarises_every_route(serving_node: NodeProcess) -> None:
    document = httpx.get(f"{serving_node.url}/openapi.json").json()
    paths = document["paths"]
    for path in ("/v1/chat/completions", "/v1/messages", "/api/chat", "/ollama/api/tags",
                 "/metrics", "/v1/models", "/cluster", "/state"):
        assert path in paths, path
    # FastAPI makes a summary from the function name when none is written: find those.
    generated = [f"{method.upper()} {path}" for path, item in paths.items()
                 for method, operation in item.items()
                 if operation["operationId"].startswith(
                     operation.get("summary", "").lower().replace(" ", "_") + "_")]
    assert generated == []
    operation_ids = [op["operationId"] for item in paths.values() for op in item.values()]
    assert len(operation_ids) == len(set(operation_ids))


def test_node_diagnostics_show_the_runner_and_its_flight_recorder(
        serving_node: NodeProcess) -> None:
    body = httpx.get(f"{serving_node.url}/v1/diagnostics/node").json()
    assert body["runtime"]["packages"]["llama-cpp-python"]
    assert body["resources"]["memory_total_bytes"] > 0
    [runner] = body["runners"]
    assert runner["process"]["alive"] and runner["process"]["rss_bytes"] > 50_000_000
    recorded = [entry["what"] for entry in runner["flight_recorder"]]
    assert recorded[0] == "spawned" and "status" in recorded
    [placement] = body["placements"]
    assert placement["model_id"] == "smollm2-135m"
    assert placement["shards"][0]["status"] in ("ready", "running")
    assert body["cluster"]["master_node_id"] == body["node_id"]


def test_cluster_diagnostics_include_this_node(serving_node: NodeProcess) -> None:
    body = httpx.get(f"{serving_node.url}/v1/diagnostics/cluster").json()
    assert list(body["nodes"]) == [body["node_id"]] and body["errors"] == {}


def test_a_traced_request_exports_api_and_runner_spans(serving_node: NodeProcess) -> None:
    url = serving_node.url
    assert httpx.post(f"{url}/v1/tracing", json={"enabled": True}).json() == {"enabled": True}
    try:
        reply = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
            "model": "smollm2-135m", "max_tokens": 12, "stream": True,
            "messages": [{"role": "user", "content": "Hi"}]})
        trace_id = reply.headers["x-skulk-command-id"]
    finally:
        httpx.post(f"{url}/v1/tracing", json={"enabled": False})
    assert trace_id in [t["trace_id"] for t in httpx.get(f"{url}/v1/traces").json()["traces"]]
    complete = validate_chrome_trace(httpx.get(f"{url}/v1/traces/{trace_id}").json())
    names = {e["name"] for e in complete}
    assert {"api.ensure_serving", "api.wait_first_chunk", "api.stream", "runner.queue",
            "runner.prefill", "runner.decode"} <= names
    stats = httpx.get(f"{url}/v1/traces/{trace_id}/stats").json()
    assert stats["tokens"] > 1 and stats["decode_tokens_per_second"] > 0
    assert stats["finished"] and stats["outcome"] in ("stop", "length")
    raw = httpx.get(f"{url}/v1/traces/{trace_id}/raw").json()
    assert len(raw["spans"]) == len(complete)
    assert httpx.get(f"{url}/v1/traces/cmd-missing").status_code == 404


def test_a_stopped_request_leaves_a_finished_trace_that_says_so(
        serving_node: NodeProcess) -> None:
    url = serving_node.url
    httpx.post(f"{url}/v1/tracing", json={"enabled": True})
    try:
        with httpx.stream("POST", f"{url}/v1/chat/completions", timeout=60, json={
                "model": "smollm2-135m", "max_tokens": 2000, "stream": True,
                "temperature": 0,  # sampled, the model sometimes stopped before the cancel
                "messages": [{"role": "user", "content": "Count to one thousand."}]}) as reply:
            trace_id = reply.headers["x-skulk-command-id"]
            lines = reply.iter_lines()
            next(line for line in lines if line.startswith("data: "))
            assert httpx.post(f"{url}/v1/cancel/{trace_id}").status_code == 200
            rest = list(lines)  # the stream ends instead of running to 2000 tokens
    finally:
        httpx.post(f"{url}/v1/tracing", json={"enabled": False})
    assert any("cancel" in line for line in rest), rest[-3:]
    [summary] = [t for t in httpx.get(f"{url}/v1/traces").json()["traces"]
                 if t["trace_id"] == trace_id]
    assert summary["finished"] and summary["outcome"] == "error: cancelled"
