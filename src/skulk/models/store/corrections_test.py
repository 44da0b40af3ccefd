"""The hub corrects a catalogue card at the first pull: real sizes and the weights' own
figures are kept in the store entry, and the catalogue serves the corrected card."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from skulk.models.catalog import ModelCatalog
from skulk.models.store.catalogue_pull import pull_request_for
from skulk.models.store.corrections import corrected_card
from skulk.models.store.manifest import StoredFile, StoreEntry
from skulk.models.store.pull import pull
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelSource
from skulk.testing.fake_hub import FakeHub
from skulk.testing.models import bundled_gguf

CARD_ID = "qwen2.5-0.5b-instruct"
REPO = "Qwen/Qwen2.5-0.5B-Instruct-GGUF"
UNVERIFIED = ["sources.size_bytes", "sources.repo", "sources.filename", "parameters"]


def _card() -> ModelCard:
    sources = [
        ModelSource(format="gguf", repo="org/M-GGUF", filename="*Q4_K_M*.gguf",
                    quant="Q4_K_M", size_bytes=400),
        ModelSource(format="gguf", repo="org/M-GGUF", filename="*Q8_0*.gguf", quant="Q8_0",
                    size_bytes=800),
        ModelSource(format="mlx", repo="mlx-community/M-4bit", filename="M-4bit",
                    quant="4bit", size_bytes=300)]
    return ModelCard(model_id=ModelId("m"), family="qwen2", model_type="qwen2", n_layers=24,
                     hidden_size=896, num_attention_heads=14, num_key_value_heads=2,
                     context_length=32768, capabilities=["text", "chat"],
                     chat_template_source="gguf", sources=sources, unverified=UNVERIFIED)


def _entry(format: str, repo: str | None, quant: str | None, size: int) -> StoreEntry:
    derived = ModelCard(model_id=ModelId("m"), family="qwen2", n_layers=28, hidden_size=896,
                        num_attention_heads=14, num_key_value_heads=2, context_length=32768,
                        capabilities=["text"], chat_template_source="gguf",
                        sources=[ModelSource.model_validate(
                            {"format": format, "filename": "m-dir/m.gguf",
                             "size_bytes": size})])
    return StoreEntry.model_validate(
        {"directory": "m-dir", "model_id": "m", "format": format, "repo": repo,
         "quant": quant, "files": [StoredFile(name="m.gguf", size_bytes=size, sha256="0")],
         "card": derived})


def test_the_held_quant_gets_its_real_size_and_goes_first_and_figures_are_corrected() -> None:
    corrected = corrected_card(_card(), [_entry("gguf", "org/M-GGUF", "Q8_0", 812)])
    assert [(s.format, s.quant, s.size_bytes) for s in corrected.sources] == [
        ("gguf", "Q8_0", 812), ("gguf", "Q4_K_M", 400), ("mlx", "4bit", 300)]
    assert corrected.n_layers == 28  # the card said 24: the weights win
    # Other sources are still guesses; the architecture is now the weights' own.
    assert corrected.unverified == UNVERIFIED


def test_every_hub_source_held_leaves_no_size_unverified() -> None:
    corrected = corrected_card(_card(), [_entry("gguf", "org/M-GGUF", "Q4_K_M", 410),
                                         _entry("gguf", "org/M-GGUF", "Q8_0", 812),
                                         _entry("mlx", "mlx-community/M-4bit", None, 290)])
    assert corrected.unverified == ["parameters"]
    assert corrected.source_for("mlx") == ModelSource(
        format="mlx", repo="mlx-community/M-4bit", filename="M-4bit", quant="4bit",
        size_bytes=290)


def test_weights_not_from_the_hub_correct_nothing() -> None:
    card = _card()
    assert corrected_card(card, [_entry("gguf", None, None, 5)]) == card


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        yield fake


def test_pulling_a_catalogue_id_stores_it_under_the_card_id_with_the_hubs_figures(
        hub: FakeHub, tmp_path: Path) -> None:
    gguf = bundled_gguf()
    # The stand-in serves the bundled model under the catalogue card's repository.
    hub.add_file(REPO, "qwen2.5-0.5b-instruct-q4_k_m.gguf", gguf)
    hub.add_file(REPO, "qwen2.5-0.5b-instruct-q8_0.gguf", gguf)
    models_dir = tmp_path / "models"
    before = ModelCatalog.builtin(models_dir).resolve(CARD_ID)
    assert before is not None and ModelCatalog.builtin(models_dir).local_path(
        before, "gguf") is None

    result = pull(models_dir, pull_request_for(CARD_ID, before), lambda done, total: None)

    assert result.entry.model_id == CARD_ID and result.entry.quant == "Q4_K_M"
    assert [f.name for f in result.entry.files] == ["qwen2.5-0.5b-instruct-q4_k_m.gguf"]
    catalog = ModelCatalog.builtin(models_dir)
    after = catalog.resolve(CARD_ID)
    assert after is not None
    held = after.source_for("gguf")
    assert held is not None and held.quant == "Q4_K_M"
    assert held.size_bytes == gguf.stat().st_size != before.storage_size
    assert after.n_layers == 30 and after.num_key_value_heads == 3  # the file's own
    assert after.attention_head_dim == 576 // 9
    assert catalog.local_path(after, "gguf") == result.path / "qwen2.5-0.5b-instruct-q4_k_m.gguf"
    assert after.aliases == before.aliases and after.capabilities == before.capabilities


def test_an_mlx_pull_corrects_the_card_from_config_json_fetched_before_the_weights(
        hub: FakeHub, tmp_path: Path) -> None:
    published = tmp_path / "published"
    published.mkdir()
    # Figures that differ from the card's, as a hub might correct them.
    (published / "config.json").write_text(
        '{"model_type": "qwen3", "num_hidden_layers": 4, "hidden_size": 64, '
        '"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, '
        '"max_position_embeddings": 4096}')
    (published / "model.safetensors").write_bytes(bytes(2 << 20))
    hub.add_directory("mlx-community/Qwen2.5-0.5B-Instruct-4bit", published)
    models_dir = tmp_path / "models"
    card = ModelCatalog.builtin(models_dir).resolve(CARD_ID)

    result = pull(models_dir, pull_request_for(CARD_ID, card, format="mlx"),
                  lambda done, total: None)

    fetched = [path.rsplit("/", 1)[-1] for method, path, _ in hub.requests
               if method == "GET" and "/resolve/" in path]
    assert fetched == ["config.json", "model.safetensors"]
    assert result.path == models_dir / f"{CARD_ID}-mlx"
    after = ModelCatalog.builtin(models_dir).resolve(CARD_ID)
    assert after is not None
    mlx = after.source_for("mlx")
    assert mlx is not None and mlx.size_bytes == 2 << 20
    assert (after.model_type, after.n_layers, after.hidden_size, after.head_dim,
            after.context_length) == ("qwen3", 4, 64, 32, 4096)
    assert after.family == "qwen2"  # the card's own: the GGUF architecture name
