"""Weights from peers between two real `skulk run` nodes of one secure cluster: the node
holding a model advertises it, and the other fetches it from the advertised port with its
own node certificate, verified."""

import json
import time
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def holder_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Node A's data dir, its store holding the bundled GGUF pulled from a stand-in hub."""
    gguf = bundled_gguf()
    with FakeHub() as hub:
        hub.add_file("someone/SmolLM2-135M-Instruct-GGUF", gguf.name, gguf)
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        result = pull(tmp_path / "a" / "models",
                      PullRequest("someone/SmolLM2-135M-Instruct-GGUF", model_id=MODEL),
                      lambda done, total: None)
    assert result.entry.directory == STORE_DIR
    return tmp_path / "a"


@pytest.fixture
def two_nodes(tmp_path: Path, holder_data_dir: Path) -> Iterator[tuple[NodeProcess, NodeProcess]]:
    namespace = f"peers-{time.monotonic_ns()}"
    a = NodeProcess(holder_data_dir, "--namespace", namespace,
                    authority=tmp_path / "authority")
    a.start()
    b = NodeProcess(tmp_path / "b", "--namespace", namespace,
                    "--peer", f"tcp/127.0.0.1:{a.transport_port}",
                    authority=tmp_path / "authority")
    try:
        b.start()
        yield a, b
    finally:
        for node in (b, a):
            if node.process is not None and node.process.poll() is None:
                node.stop()


def _readings(node: NodeProcess) -> dict[NodeId, NodeTelemetry]:
    return {NodeId(n): NodeTelemetry.model_validate_json(json.dumps(r))
            for n, r in node.state()["telemetry"].items()}


def test_a_node_fetches_a_held_model_from_its_peer(
        two_nodes: tuple[NodeProcess, NodeProcess], tmp_path: Path) -> None:
    a, b = two_nodes
    a_id, b_id = NodeId(a.node_id()), NodeId(b.node_id())

    def b_sees_a_holding() -> bool:
        readings = _readings(b)
        reading, own = readings.get(a_id), readings.get(b_id)
        # B reaches A only on loopback here, which it uses once its probe saw A there.
        reached = own is not None and any(p.node_id == a_id for p in own.reachability.peers)
        return reached and reading is not None and reading.weights_port is not None and any(
            held.model_id == MODEL for held in reading.held_models)
    b.wait_until(b_sees_a_holding, 45, "B's telemetry to show A holding the model and an "
                 "edge from B to A")

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
