"""The history on a real node: samples of real requests every 5 s, a failover marker when
its runner is killed, and the metrics the Prometheus rules read."""

import os
import signal
from pathlib import Path
from typing import Any

import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families

from tests.node_process import meshed_nodes, serving_bundled_model


def test_a_node_samples_its_requests_and_marks_a_runner_failure(tmp_path: Path) -> None:
    with serving_bundled_model(tmp_path) as node:
        client = openai.OpenAI(base_url=f"{node.url}/v1", api_key="x", max_retries=0)
        for _ in range(3):
            client.chat.completions.create(model="smollm2-135m", max_tokens=8,
                                           messages=[{"role": "user", "content": "Hi"}])

        def history() -> dict[str, Any]:  # JSON
            response = node.get("/v1/history")
            assert response.status_code == 200, response.text
            body: dict[str, Any] = response.json()
            return body

        def served() -> bool:
            tokens_per_second: list[float] = history()["cluster"]["decode_tokens_per_second"]
            return sum(tokens_per_second) > 0

        node.wait_until(served, 60.0, "a sample with the requests' tokens")
        body = history()
        cluster = body["cluster"]
        assert len(cluster["t"]) >= 1
        assert any(p is not None and p > 0 for p in cluster["ttft_p95_seconds"])
        assert any(m > 0 for m in cluster["memory_used_bytes"])
        [instance] = body["instances"]
        assert sum(instance["series"]["requests_per_second"]) > 0
        assert "placement" in [m["kind"] for m in body["markers"]]

        [pid] = node.runner_pids()
        os.kill(pid, signal.SIGKILL)

        def marked() -> bool:
            return any(m["kind"] == "failover" for m in history()["markers"])

        node.wait_until(marked, 60.0, "a failover marker for the killed runner")

        def restarts() -> int:
            [own] = history()["nodes"]
            count: int = own["runner_restarts"]
            return count

        node.wait_until(lambda: restarts() >= 1, 60.0, "the runner's failure counted")

        metrics = httpx.get(f"{node.url}/metrics").text
        names = {family.name for family in text_string_to_metric_families(metrics)}
        for name in ("skulk_instance_tokens_generated", "skulk_instance_queue_depth",
                     "skulk_instance_queue_limit", "skulk_disk_free_bytes",
                     "skulk_certificate_expiry_timestamp_seconds"):
            assert name in names, name
        expiry = [s for family in text_string_to_metric_families(metrics)
                  for s in family.samples
                  if s.name == "skulk_certificate_expiry_timestamp_seconds"]
        assert {s.labels["certificate"] for s in expiry} == {"node", "ca"}


def test_any_node_serves_every_nodes_history_and_prometheus_targets(tmp_path: Path) -> None:
    # On every interface, so each node advertises its API (a loopback one is not).
    with meshed_nodes(tmp_path, 2, "--no-worker", "--api-host", "0.0.0.0") as (a, b):
        ids = {a.node_id(), b.node_id()}

        def both_sampled() -> bool:
            body = b.get("/v1/history").json()
            sampled = {n["node_id"] for n in body["nodes"] if n["latest"] is not None}
            return sampled == ids and not body["errors"]

        b.wait_until(both_sampled, 60.0, "b to serve a's samples beside its own")
        series = b.get("/v1/history").json()["cluster"]
        assert 2.0 in series["nodes_reporting"]
        assert b.get(f"/v1/history/nodes/{a.node_id()}").json()["series"]["t"]

        # Targets follow the cluster's live nodes, which b's replica learns on its own time.
        b.wait_until(lambda: {t["labels"]["skulk_node_id"] for t in
                              b.get("/v1/prometheus/targets").json()} == ids,
                     30.0, "b to list both nodes as Prometheus targets")
        targets = b.get("/v1/prometheus/targets").json()
        assert {t["targets"][0].rsplit(":", 1)[1] for t in targets} == {
            str(a.api_port), str(b.api_port)}
