"""Pulls through the real `huggingface_hub` client from a stand-in hub on loopback."""

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from skulk.models.catalog import ModelCatalog
from skulk.models.store.hub_client import HubUnavailable
from skulk.models.store.manifest import read_entry
from skulk.models.store.pull import PARTIAL_DIR, CorruptFile, PullRequest, pull
from skulk.testing.fake_hub import FakeHub
from skulk.testing.models import bundled_gguf as _bundled_gguf

BUNDLED = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        yield fake


def _safetensors_repo(directory: Path) -> Path:
    directory.mkdir()
    (directory / "config.json").write_text(
        '{"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 896, '
        '"num_attention_heads": 14, "num_key_value_heads": 2, '
        '"max_position_embeddings": 32768}')
    (directory / "tokenizer_config.json").write_text('{"chat_template": "{{ messages }}"}')
    (directory / "model.safetensors").write_bytes(os.urandom(3 << 20))
    (directory / "README.md").write_text("not fetched")
    return directory


def test_a_gguf_repository_is_pulled_verified_and_served_from_its_derived_card(
        hub: FakeHub, tmp_path: Path) -> None:
    hub.add_file("someone/SmolLM2-135M-Instruct-GGUF", BUNDLED, _bundled_gguf())
    hub.add_file("someone/SmolLM2-135M-Instruct-GGUF", "README.md", _bundled_gguf().parent
                 / "__init__.py")
    seen: list[tuple[int, int]] = []
    models = tmp_path / "models"
    result = pull(models, PullRequest("someone/SmolLM2-135M-Instruct-GGUF",
                                      model_id="smol-pulled"), lambda d, t: seen.append((d, t)))

    size = _bundled_gguf().stat().st_size
    assert result.fetched and result.path == models / "smol-pulled-gguf-q4_1"
    assert [f.name for f in result.entry.files] == [BUNDLED]
    assert result.entry.files[0].sha256 == hashlib.sha256(
        _bundled_gguf().read_bytes()).hexdigest()
    assert seen[-1] == (size, size) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    card = result.entry.card
    assert card is not None
    assert (card.family, card.n_layers, card.hidden_size) == ("llama", 30, 576)
    assert (card.num_attention_heads, card.num_key_value_heads) == (9, 3)
    assert "chat" in card.capabilities
    assert not (models / PARTIAL_DIR / "smol-pulled-gguf-q4_1").exists()

    catalog = ModelCatalog.builtin(models)
    served = catalog.resolve("smol-pulled")
    assert served is not None and catalog.local_path(served, "gguf") == result.path / BUNDLED

    again = pull(models, PullRequest("someone/SmolLM2-135M-Instruct-GGUF",
                                     model_id="smol-pulled"), lambda d, t: None)
    assert not again.fetched


def test_a_safetensors_repository_brings_config_and_tokenizer(hub: FakeHub,
                                                              tmp_path: Path) -> None:
    hub.add_directory("org/Tiny-Qwen", _safetensors_repo(tmp_path / "src"))
    result = pull(tmp_path / "models", PullRequest("org/Tiny-Qwen"), lambda d, t: None)
    assert result.entry.model_id == "tiny-qwen" and result.entry.format == "mlx"
    assert sorted(f.name for f in result.entry.files) == [
        "config.json", "model.safetensors", "tokenizer_config.json"]
    card = result.entry.card
    assert card is not None
    assert (card.family, card.n_layers, card.num_key_value_heads) == ("qwen2", 24, 2)
    assert card.capabilities == ["text", "chat"]
    assert read_entry(result.path) == result.entry


def test_bytes_that_do_not_match_the_advertised_sha256_are_refused(hub: FakeHub,
                                                                   tmp_path: Path) -> None:
    hub.add_directory("org/Tiny-Qwen", _safetensors_repo(tmp_path / "src"))
    hub.corrupt.add(("org/Tiny-Qwen", "model.safetensors"))
    models = tmp_path / "models"
    with pytest.raises(CorruptFile, match="model.safetensors: its sha256 is .* will not be"):
        pull(models, PullRequest("org/Tiny-Qwen"), lambda d, t: None)
    assert read_entry(models / "tiny-qwen-mlx") is None
    assert not (models / PARTIAL_DIR / "tiny-qwen-mlx" / "model.safetensors").exists()
    assert ModelCatalog.builtin(models).resolve("tiny-qwen") is None


def test_an_unreachable_hub_is_reported_as_such(hub: FakeHub, tmp_path: Path) -> None:
    hub.add_directory("org/Tiny-Qwen", _safetensors_repo(tmp_path / "src"))
    hub.down = True
    with pytest.raises(HubUnavailable, match="cannot list org/Tiny-Qwen"):
        pull(tmp_path / "models", PullRequest("org/Tiny-Qwen"), lambda d, t: None)


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:9", "http://no-such-host.invalid"])
def test_a_hub_nobody_answers_at_is_reported_not_raised_as_the_http_librarys_error(
        endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", endpoint)  # a closed port; a name that never resolves
    with pytest.raises(HubUnavailable, match="cannot list org/Tiny-Qwen"):
        pull(tmp_path / "models", PullRequest("org/Tiny-Qwen"), lambda d, t: None)
