"""A node restarted on the same data dir starts cleanly and keeps its identity."""

from pathlib import Path

import httpx

from tests.node_process import NodeProcess


def test_restart_on_the_same_data_dir(tmp_path: Path) -> None:
    first = NodeProcess(tmp_path, "--serve", "smollm2-135m").start()
    try:
        first.wait_model_ready()
        node_id = first.get("/node_id").json()["node_id"]
    finally:
        assert first.stop() == 0
    second = NodeProcess(tmp_path, "--serve", "smollm2-135m").start()
    try:
        assert second.get("/node_id").json()["node_id"] == node_id
        second.wait_model_ready()
        reply = httpx.post(f"{second.url}/v1/chat/completions", timeout=60, json={
            "model": "smollm2-135m", "max_tokens": 8,
            "messages": [{"role": "user", "content": "Hi"}]})
        assert reply.status_code == 200, reply.text
    finally:
        assert second.stop() == 0
    archives = list((tmp_path / "event_log").glob("events.*.bin.zst"))
    assert len(archives) >= 1, "the first run's log is archived on restart"
    assert "Traceback" not in second.log()


def test_a_killed_lone_node_comes_back_serving_what_it_served(tmp_path: Path) -> None:
    first = NodeProcess(tmp_path, "--serve", "smollm2-135m").start()
    try:
        first.wait_model_ready()
        instances = set(first.state()["instances"])
    finally:
        first.kill()  # kill -9: no shutdown, the live log file stays as it was
    second = NodeProcess(tmp_path, "--no-auto-place").start()
    try:
        second.wait_model_ready()
        assert set(second.state()["instances"]) == instances, \
            "the same instance, restored from the log, not placed anew"
        reply = httpx.post(f"{second.url}/v1/chat/completions", timeout=60, json={
            "model": "smollm2-135m", "max_tokens": 8,
            "messages": [{"role": "user", "content": "Hi"}]})
        assert reply.status_code == 200, reply.text
        assert "restored the State" in second.log()
    finally:
        assert second.stop() == 0
    assert "Traceback" not in second.log()
