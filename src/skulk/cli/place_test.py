"""`skulk place` follows its instance to an outcome, against a scripted node."""

import argparse
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from skulk.cli import place as place_command

URL = "http://node"


def rank(status: str, fetch: dict[str, Any] | None = None,
         error: str | None = None) -> dict[str, Any]:
    return {"rank": 0, "node_id": "node-a", "start_layer": 0, "end_layer": 30,
            "runner_status": status, "fetch": fetch, "error": error}


def instance(instance_id: str, status: str, *ranks: dict[str, Any]) -> dict[str, Any]:
    return {"instance_id": instance_id, "model_id": "qwen", "engine": "llama_cpp",
            "status": status, "ranks": list(ranks)}


def script(monkeypatch: pytest.MonkeyPatch,
           answers: list[tuple[str, int, dict[str, Any]]]) -> list[tuple[str, str, Any]]:
    """Answer each request with the next (path, status, body); return what was asked."""
    asked: list[tuple[str, str, Any]] = []
    replies: Iterator[tuple[str, int, dict[str, Any]]] = iter(answers)

    def request_node(method: str, url: str, **kwargs: Any) -> httpx.Response:
        path, status, body = next(replies)
        asked.append((method, url.removeprefix(URL), kwargs.get("json")))
        assert url == URL + path, (url, path)
        return httpx.Response(status, json=body)

    monkeypatch.setattr(place_command, "request_node", request_node)
    monkeypatch.setattr(place_command, "POLL_SECONDS", 0.0)
    return asked


def args(**overrides: object) -> argparse.Namespace:
    fields: dict[str, object] = {"model": "qwen", "engine": None, "sharding": "pipeline",
                                 "min_nodes": 1, "exclude": [], "wait": True,
                                 "prefer": "fewest_nodes"}
    return argparse.Namespace(**{**fields, **overrides})


def test_it_shows_each_step_and_ends_when_the_instance_is_ready(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fetching = {"done_bytes": 50 << 20, "total_bytes": 100 << 20, "source": "hub Q/Q"}
    script(monkeypatch, [
        ("/place_instance", 201, instance("i1", "pending", rank("pending"))),
        ("/instance/i1", 200, instance("i1", "loading", rank("fetching", fetching))),
        ("/instance/i1", 200, instance("i1", "loading", rank("fetching", fetching))),
        ("/instance/i1", 200, instance("i1", "loading", rank("loading"))),
        ("/instance/i1", 200, instance("i1", "ready", rank("ready")))])
    assert place_command.place(URL, args()) == 0
    assert capsys.readouterr().out.splitlines() == [
        "placed qwen as instance i1 on node node-a (llama_cpp); waiting until it is ready",
        "  rank 0 on node-a, layers 0–29: pending",
        "  rank 0 on node-a, layers 0–29: fetching from hub Q/Q, 50% of 100 MiB",
        "  rank 0 on node-a, layers 0–29: loading",
        "  rank 0 on node-a, layers 0–29: ready",
        "ready: qwen as instance i1"]


def test_a_removed_instance_ends_it_with_the_reason_and_exit_1(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    why = "node node-a gave it up: cannot list Q/Q on the hub: Name or service not known"
    asked = script(monkeypatch, [
        ("/place_instance", 201, instance("i1", "pending", rank("pending"))),
        ("/instance/i1", 200, instance("i1", "failed", rank("failed", error=why))),
        ("/instance/i1", 410, {"error": {"message": f"instance i1 was removed: {why}"}}),
        ("/instance/i1/removal", 200, {"instance_id": "i1", "model_id": "qwen",
                                       "reason": why, "replaced_by": None})])
    assert place_command.place(URL, args(min_nodes=2, exclude=["node-b"],
                                         prefer="speed")) == 1
    shown = capsys.readouterr()
    assert f"rank 0 on node-a, layers 0–29: failed: {why}" in shown.out
    assert shown.err == f"skulk: placing qwen failed: instance i1 was removed: {why}\n"
    assert asked[0] == ("POST", "/place_instance", {
        "model_id": "qwen", "engine": None, "sharding": "pipeline", "min_nodes": 2,
        "excluded_nodes": ["node-b"], "prefer": "speed"})


def test_it_follows_the_instance_the_master_placed_instead(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    script(monkeypatch, [
        ("/place_instance", 201, instance("i1", "pending", rank("pending"))),
        ("/instance/i1", 410, {"error": {"message": "removed"}}),
        ("/instance/i1/removal", 200, {"instance_id": "i1", "model_id": "qwen",
                                       "reason": "node node-a refused its shard; placed "
                                       "again over 2 nodes as i2", "replaced_by": "i2"}),
        ("/instance/i2", 200, instance("i2", "ready", rank("ready")))])
    assert place_command.place(URL, args()) == 0
    out = capsys.readouterr().out
    assert "instance i1 was removed: node node-a refused its shard" in out
    assert out.endswith("ready: qwen as instance i2\n")


def test_without_waiting_it_returns_once_placed(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    script(monkeypatch, [("/place_instance", 201, instance("i1", "pending", rank("pending")))])
    assert place_command.place(URL, args(wait=False)) == 0
    assert capsys.readouterr().out == "placed qwen as instance i1\n"
