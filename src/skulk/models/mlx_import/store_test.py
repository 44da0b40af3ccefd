import hashlib
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skulk.models.catalog import ModelCatalog
from skulk.models.mlx_import.conftest import TinyModel
from skulk.models.mlx_import.store import (
    ensure_mlx_model,
    import_to_store,
    read_provenance,
    store_name,
)
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelSource


def _card(with_mlx: bool = True) -> ModelCard:
    sources = [ModelSource(format="gguf", filename="tiny.gguf", size_bytes=1)]
    if with_mlx:
        sources.append(ModelSource(format="mlx", filename="tiny-mlx-store", size_bytes=1))
    return ModelCard(
        model_id=ModelId("tiny"), family="llama", n_layers=2, hidden_size=64, num_attention_heads=4,
        num_key_value_heads=2, context_length=128, capabilities=["text"],
        chat_template_source="gguf", sources=sources)


def _leftovers(models_dir: Path) -> list[str]:
    return sorted(p.name for p in models_dir.iterdir() if ".staging-" in p.name)


def test_store_names_follow_the_card() -> None:
    assert store_name(_card(), "tiny", None) == "tiny-mlx-store"
    assert store_name(_card(), "tiny", 4) == "tiny-mlx-store-q4"
    assert store_name(_card(with_mlx=False), "tiny", None) == "tiny-mlx"
    assert store_name(None, "other", 8) == "other-mlx-q8"


def test_import_publishes_once_with_provenance(tiny_gguf: TinyModel, tmp_path: Path) -> None:
    first = import_to_store(tiny_gguf.gguf_path, tmp_path, "tiny-mlx", "tiny", None)
    assert first.imported and first.path == tmp_path / "tiny-mlx"
    assert (first.path / "model.safetensors").is_file()
    provenance = read_provenance(first.path)
    assert provenance is not None and provenance.source_format == "gguf"
    assert provenance.source_sha256 == hashlib.sha256(
        tiny_gguf.gguf_path.read_bytes()).hexdigest()
    assert provenance.weight_files == ["model.safetensors"] and provenance.q_bits is None
    again = import_to_store(tiny_gguf.gguf_path, tmp_path, "tiny-mlx", "tiny", None)
    assert not again.imported and again.path == first.path
    assert _leftovers(tmp_path) == []


def test_a_failed_import_leaves_nothing_that_looks_complete(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    models_dir = tmp_path / "models"
    models_dir.mkdir()
    (models_dir / ".tiny-mlx.staging-crashed").mkdir()  # what a killed import leaves
    with pytest.raises(ValueError, match="broken.gguf"):
        import_to_store(broken, models_dir, "tiny-mlx", "tiny", None)
    assert not (models_dir / "tiny-mlx").exists()
    assert _leftovers(models_dir) == []


def test_replace_imports_again(tiny_gguf: TinyModel, tmp_path: Path) -> None:
    import_to_store(tiny_gguf.gguf_path, tmp_path, "tiny-mlx", "tiny", None)
    replaced = import_to_store(tiny_gguf.gguf_path, tmp_path, "tiny-mlx", "tiny", 4,
                               replace=True)
    assert replaced.imported
    provenance = read_provenance(replaced.path)
    assert provenance is not None and provenance.q_bits == 4
    assert [p.name for p in tmp_path.iterdir() if "retired" in p.name] == []


def test_concurrent_imports_of_one_name_convert_once(
    tiny_gguf: TinyModel, tmp_path: Path,
) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(
            lambda _: import_to_store(tiny_gguf.gguf_path, tmp_path, "tiny-mlx", "tiny", None),
            range(3)))
    assert sorted(result.imported for result in results) == [False, False, True]
    assert {result.path for result in results} == {tmp_path / "tiny-mlx"}


def test_ensure_imports_from_the_cards_gguf_on_first_use(
    tiny_gguf: TinyModel, tmp_path: Path,
) -> None:
    card = _card()
    catalog = ModelCatalog([card], tmp_path)
    with pytest.raises(FileNotFoundError, match="skulk models import"):
        ensure_mlx_model(catalog, card)
    shutil.copyfile(tiny_gguf.gguf_path, tmp_path / "tiny.gguf")
    path = ensure_mlx_model(catalog, card)
    assert path == tmp_path / "tiny-mlx-store" and catalog.local_path(card, "mlx") == path
    quantized = ensure_mlx_model(catalog, card, q_bits=4)
    assert quantized == tmp_path / "tiny-mlx-store-q4" and (quantized / "config.json").exists()
    assert ensure_mlx_model(catalog, card) == path  # already there: no second import
