"""A pipeline stage fetched between two real `skulk run` nodes: node A pulled a sharded
MLX model whole; an instance split over A and B by layers makes B copy, from A, only the
files its layers need (the hub is gone), load that stage copy, agree with A's whole copy
on the weights, and serve."""

import time
from pathlib import Path

import httpx
import pytest

from skulk.models.store.layer_files import INDEX_FILE, files_for_layers, weight_map_of
from skulk.models.store.manifest import read_entry
from skulk.models.store.pull import PullRequest, pull
from skulk.testing.fake_hub import FakeHub
from skulk.testing.sharded_llama import shard_checkpoint
from skulk.testing.tiny_model import write_tiny_model
from tests.node_process import meshed_nodes

pytestmark = pytest.mark.integration

MODEL = "tiny-staged"
REPO = "someone/tiny-staged-mlx"
READY_SECONDS = 240.0


def _pull_sharded_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Node A's store gets the model whole, from a stand-in hub that is gone afterwards
    (its endpoint stays set: the nodes find no hub there)."""
    published = shard_checkpoint(write_tiny_model(tmp_path / "published", layers=8), 4)
    with FakeHub() as hub:
        hub.add_directory(REPO, published)
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        pull(tmp_path / "cluster" / "a" / "models", PullRequest(REPO, model_id=MODEL),
             lambda done, total: None)


def test_a_pipeline_rank_copies_only_its_layers_files_from_a_peer_and_serves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pull_sharded_model(tmp_path, monkeypatch)
    with meshed_nodes(tmp_path / "cluster", 2, "--no-auto-place") as (a, b):
        a_id, b_id = a.node_id(), b.node_id()

        def b_sees_a_holding() -> bool:
            telemetry = b.state()["telemetry"]
            held = telemetry.get(a_id, {}).get("held_models", [])
            return any(h["model_id"] == MODEL for h in held) and \
                MODEL in {m["id"] for m in b.get("/v1/models").json()["data"]}

        def each_reaches_the_other() -> bool:  # the ring is wired from both sides' edges
            telemetry = a.state()["telemetry"]
            return all(any(p["node_id"] == other for p in telemetry.get(node, {}).get(
                "reachability", {}).get("peers", []))
                for node, other in ((a_id, b_id), (b_id, a_id)))
        b.wait_until(b_sees_a_holding, 60.0, "B to see A holding the model")
        a.wait_until(each_reaches_the_other, 60.0, "A and B to observe each other")

        started = time.monotonic()
        placed = httpx.post(f"{a.url}/place_instance", timeout=60, json={
            "model_id": MODEL, "engine": "mlx", "min_nodes": 2, "sharding": "pipeline"})
        assert placed.status_code == 201, placed.text
        instance = a.wait_instance_ready(placed.json()["instance_id"], READY_SECONDS)
        [b_rank] = [r for r in instance["ranks"] if r["node_id"] == b_id]
        reply = httpx.post(f"{b.url}/v1/chat/completions", timeout=120, json={
            "model": MODEL, "max_tokens": 6, "temperature": 0,
            "messages": [{"role": "user", "content": "Say hello."}]})
        assert reply.status_code == 200, reply.text
        assert f"fetching {MODEL} from peer {a_id}" in b.log()
        assert time.monotonic() - started < READY_SECONDS

    layers = (b_rank["start_layer"], b_rank["end_layer"])
    stage = read_entry(tmp_path / "cluster" / "b" / "models"
                       / f"{MODEL}-mlx-layers-{layers[0]}-{layers[1]}")
    whole = read_entry(tmp_path / "cluster" / "a" / "models" / f"{MODEL}-mlx")
    assert stage is not None and whole is not None and stage.layers == layers
    index = tmp_path / "published" / INDEX_FILE
    needed = files_for_layers(weight_map_of(index.read_bytes()), *layers)
    assert {f.name for f in stage.files if f.name.endswith(".safetensors")} == needed
    # Eight layers in four files: each half of the model skips one file.
    if layers in ((0, 4), (4, 8)):
        assert len(needed) == 3
    assert stage.model_files == whole.files
    assert not (tmp_path / "cluster" / "b" / "models" / f"{MODEL}-mlx").exists()
