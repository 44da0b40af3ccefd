"""`skulk models pull` as a user runs it, against a stand-in hub on loopback: progress,
a pull killed mid-file and resumed, a full disk."""

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from skulk.cli.units import size_text
from skulk.models.store.free_space import NotEnoughSpace
from skulk.models.store.hashing import file_sha256
from skulk.models.store.pull import PARTIAL_DIR, PullRequest, pull
from skulk.models.store.pull_progress import pulls_under_way
from skulk.testing.fake_hub import FakeHub
from skulk.testing.models import bundled_gguf
from tests.node_process import NodeProcess

pytestmark = pytest.mark.integration

# huggingface_hub writes in 10 MB chunks: the stall must come after the first one.
WEIGHTS_BYTES = 24 << 20


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    source = tmp_path / "published"
    source.mkdir()
    (source / "config.json").write_text(
        '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, '
        '"num_attention_heads": 4, "num_key_value_heads": 2, '
        '"max_position_embeddings": 2048}')
    (source / "model.safetensors").write_bytes(os.urandom(WEIGHTS_BYTES))
    with FakeHub() as fake:
        fake.add_directory("org/Tiny-Llama", source)
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        yield fake


def _pull_command(data_dir: Path) -> list[str]:
    return [sys.executable, "-m", "skulk.cli.main", "models", "pull", "org/Tiny-Llama",
            "--data-dir", str(data_dir)]


def test_pull_shows_progress_and_the_model_is_listed(hub: FakeHub, tmp_path: Path) -> None:
    pulled = subprocess.run(_pull_command(tmp_path), capture_output=True, text=True,
                            timeout=120)
    assert pulled.returncode == 0, pulled.stderr
    assert "100.0%" in pulled.stderr and re.search(r"\d (B|KiB|MiB|GiB)/s", pulled.stderr)
    assert "pulled tiny-llama (mlx" in pulled.stdout and "sha256-verified" in pulled.stdout
    listed = subprocess.run([sys.executable, "-m", "skulk.cli.main", "models", "list",
                             "--data-dir", str(tmp_path)], capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0 and "tiny-llama" in listed.stdout
    assert str(tmp_path / "models" / "tiny-llama-mlx") in listed.stdout


def test_a_pull_killed_mid_file_resumes_where_it_stopped(hub: FakeHub,
                                                         tmp_path: Path) -> None:
    stall_at = 15 << 20
    hub.stall_after[("org/Tiny-Llama", "model.safetensors")] = stall_at
    first = subprocess.Popen(_pull_command(tmp_path), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        assert hub.stalled.wait(timeout=60), "the pull never reached the weights"
        partial = tmp_path / "models" / PARTIAL_DIR / "tiny-llama-mlx"
        # The bytes before the stall reach the partial file (at least the first 10 MB
        # chunk: under load the first check can see only part of it), and the pull's
        # progress record says so, before the kill.
        for _ in range(600):
            written = sum(p.stat().st_size for p in partial.glob("*.part"))
            told = sum(p.done_bytes for p in pulls_under_way(partial.parent))
            if written >= 10 << 20 and told > 0:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    # The killed pull's record stays, so its node shows the pull stopped midway.
    [stopped] = pulls_under_way(tmp_path / "models" / PARTIAL_DIR)
    assert stopped.model_id == "tiny-llama" and stopped.repo == "org/Tiny-Llama"
    assert 0 < stopped.done_bytes < stopped.total_bytes
    del hub.stall_after[("org/Tiny-Llama", "model.safetensors")]
    hub.release.set()

    resumed = subprocess.run(_pull_command(tmp_path), capture_output=True, text=True,
                             timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert pulls_under_way(tmp_path / "models" / PARTIAL_DIR) == []  # finished: no record
    ranges = [r for method, path, r in hub.requests
              if method == "GET" and path.endswith("/model.safetensors") and r]
    assert ranges and int(ranges[-1].removeprefix("bytes=").split("-")[0]) >= 10 << 20
    stored = tmp_path / "models" / "tiny-llama-mlx" / "model.safetensors"
    published = hub.repos["org/Tiny-Llama"].files["model.safetensors"]
    assert file_sha256(stored) == published.sha256


# A small disk is a tmpfs mounted for the test, which takes root (the machines and CI run
# the suite as root).
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small-disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)],
                   check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@needs_root
def test_too_little_room_is_refused_before_the_first_byte(hub: FakeHub,
                                                          small_disk: Path) -> None:
    pulled = subprocess.run(_pull_command(small_disk), capture_output=True, text=True,
                            timeout=120)
    assert pulled.returncode == 1
    assert "not enough disk space for tiny-llama" in pulled.stderr
    assert not any(r[0] == "GET" and "/resolve/" in r[1] for r in hub.requests)


@needs_root
def test_a_disk_that_fills_mid_fetch_is_reported_and_the_partial_removed(
        hub: FakeHub, small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another writer takes the room after the check: skip the check to get there.
    monkeypatch.setattr("skulk.models.store.pull.require_space", lambda *args: None)
    with pytest.raises(NotEnoughSpace, match="the disk filled while fetching tiny-llama"):
        pull(small_disk / "models", PullRequest("org/Tiny-Llama"), lambda d, t: None)
    assert not (small_disk / "models" / PARTIAL_DIR / "tiny-llama-mlx").exists()
    assert not (small_disk / "models" / "tiny-llama-mlx").exists()


def test_a_pulled_gguf_is_served_under_its_own_id(hub: FakeHub, tmp_path: Path) -> None:
    gguf = bundled_gguf()
    hub.add_file("someone/SmolLM2-135M-Instruct-GGUF", gguf.name, gguf)
    pulled = subprocess.run(
        [sys.executable, "-m", "skulk.cli.main", "models", "pull",
         "someone/SmolLM2-135M-Instruct-GGUF", "--model-id", "smol-pulled",
         "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert pulled.returncode == 0, pulled.stderr
    node = NodeProcess(tmp_path, "--serve", "smol-pulled")
    node.start()
    try:
        node.wait_model_ready()
        client = openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", max_retries=0)
        assert "smol-pulled" in [m.id for m in client.models.list()]
        reply = client.chat.completions.create(
            model="smol-pulled", max_tokens=8, temperature=0.0,
            messages=[{"role": "user", "content": "Say hello."}])
        assert reply.choices[0].message.content
    finally:
        node.stop()


def test_a_catalogue_id_is_pulled_under_the_cards_id_with_the_hubs_sizes(
        hub: FakeHub, tmp_path: Path) -> None:
    gguf = bundled_gguf()
    # The stand-in serves the bundled model under the catalogue card's GGUF repository.
    hub.add_file("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf", gguf)
    pulled = subprocess.run(
        [sys.executable, "-m", "skulk.cli.main", "models", "pull", "qwen2.5-0.5b-instruct",
         "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert pulled.returncode == 0, pulled.stderr
    assert ("qwen2.5-0.5b-instruct: gguf Q4_K_M from Qwen/Qwen2.5-0.5B-Instruct-GGUF"
            in pulled.stderr)
    assert "pulled qwen2.5-0.5b-instruct (gguf" in pulled.stdout
    stored = tmp_path / "models" / "qwen2.5-0.5b-instruct-gguf-q4_k_m"
    assert file_sha256(stored / "qwen2.5-0.5b-instruct-q4_k_m.gguf") == file_sha256(gguf)
    listed = subprocess.run([sys.executable, "-m", "skulk.cli.main", "models", "list",
                             "--data-dir", str(tmp_path)], capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0, listed.stderr
    [line] = [row for row in listed.stdout.splitlines()
              if row.startswith("qwen2.5-0.5b-instruct ")]
    # The hub's size replaced the card's guess, and the weights are held here.
    assert f"gguf {size_text(gguf.stat().st_size)}" in line and line.endswith("gguf")
    assert str(stored / "qwen2.5-0.5b-instruct-q4_k_m.gguf") in listed.stdout
