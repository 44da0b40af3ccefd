"""`add` and `remove` on a real store: the bundled GGUF and a tiny generated HF directory."""

import hashlib
from pathlib import Path

import pytest

from skulk.models.catalog import ModelCatalog
from skulk.models.store.add import AddRequest, add, default_model_id
from skulk.models.store.manifest import read_entry, stored_entries
from skulk.models.store.remove import NotInStore, remove
from skulk.testing.models import bundled_gguf

BUILTIN = ModelCatalog.builtin(Path("/nonexistent")).builtin_card


def _hf_directory(directory: Path) -> Path:
    directory.mkdir()
    (directory / "config.json").write_text(
        '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, '
        '"num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512}')
    (directory / "tokenizer.json").write_text("{}")
    (directory / "tokenizer_config.json").write_text('{"chat_template": "{{ messages }}"}')
    (directory / "model.safetensors").write_bytes(b"\x08" * 4096)
    return directory


def test_a_gguf_is_hard_linked_hashed_and_carded(tmp_path: Path) -> None:
    gguf = tmp_path / "Tiny.Q4_1.gguf"
    gguf.write_bytes(bundled_gguf().read_bytes())  # same file system as the store
    models = tmp_path / "models"
    result = add(models, AddRequest(gguf), BUILTIN)

    assert result.path == models / "tiny.q4_1-gguf" and result.linked
    assert (result.path / gguf.name).samefile(gguf)
    entry = read_entry(result.path)
    assert entry == result.entry and entry.linked_from is None
    assert entry.files[0].sha256 == hashlib.sha256(gguf.read_bytes()).hexdigest()
    card = entry.card
    assert card is not None and card.model_id == "tiny.q4_1"
    assert (card.n_layers, card.num_key_value_heads) == (30, 3)
    assert card.sources[0].filename == f"tiny.q4_1-gguf/{gguf.name}"
    assert not (models / ".partial" / "tiny.q4_1-gguf").exists()


def test_link_leaves_files_in_place_and_remove_leaves_them_alone(tmp_path: Path) -> None:
    source = _hf_directory(tmp_path / "My-Model")
    models = tmp_path / "models"
    result = add(models, AddRequest(source, model_id="mine", link=True), BUILTIN)

    assert result.entry.linked_from == str(source)
    assert (result.path / "model.safetensors").is_symlink()
    card = result.entry.card
    assert card is not None and card.sources[0].filename == "mine-mlx"
    assert card.sources[0].size_bytes == 4096 and "chat" in card.capabilities
    assert sorted(f.name for f in result.entry.files) == [
        "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]

    assert [e.model_id for e in remove(models, "mine", BUILTIN)] == ["mine"]
    assert stored_entries(models) == [] and (source / "model.safetensors").is_file()


def test_default_id_comes_from_the_name() -> None:
    assert default_model_id(Path("/x/My Model_v2")) == "my-model_v2"


def _bad_path(directory: Path, kind: str) -> Path:
    if kind == "text file":
        (directory / "notes.txt").write_text("x")
        return directory / "notes.txt"
    if kind == "empty directory":
        (directory / "empty").mkdir()
        return directory / "empty"
    return directory / "absent.gguf"


@pytest.mark.parametrize(("kind", "message"), [
    ("missing", "absent.gguf does not exist"),
    ("text file", "not a .gguf file"),
    ("empty directory", r"lacks config.json, \*.safetensors, tokenizer.json or tokenizer"),
])
def test_bad_paths_are_refused_clearly(tmp_path: Path, kind: str, message: str) -> None:
    with pytest.raises((ValueError, OSError), match=message):
        add(tmp_path / "models", AddRequest(_bad_path(tmp_path, kind)), BUILTIN)
    assert stored_entries(tmp_path / "models") == []


def test_a_builtin_id_a_bad_id_and_a_second_add_are_refused(tmp_path: Path) -> None:
    models = tmp_path / "models"
    source = _hf_directory(tmp_path / "m")
    with pytest.raises(ValueError, match="built-in model 'smollm2-135m'"):
        add(models, AddRequest(source, model_id="SmolLM2-135M"), BUILTIN)
    with pytest.raises(ValueError, match="not a usable model id"):
        add(models, AddRequest(source, model_id="a/b"), BUILTIN)
    add(models, AddRequest(source, model_id="m"), BUILTIN)
    with pytest.raises(FileExistsError, match="skulk models remove m"):
        add(models, AddRequest(source, model_id="m"), BUILTIN)


def test_a_card_that_cannot_be_derived_leaves_nothing(tmp_path: Path) -> None:
    source = _hf_directory(tmp_path / "m")
    (source / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(ValueError, match="cannot derive a model card for m"):
        add(tmp_path / "models", AddRequest(source), BUILTIN)
    assert stored_entries(tmp_path / "models") == []
    assert not (tmp_path / "models" / ".partial" / "m-mlx").exists()


def test_remove_refuses_the_bundled_model_and_unknown_ids(tmp_path: Path) -> None:
    with pytest.raises(NotInStore, match="built-in model: its weights ship with Skulk"):
        remove(tmp_path, "smollm2-135m", BUILTIN)
    with pytest.raises(NotInStore, match="no model 'nope' in the store"):
        remove(tmp_path, "nope", BUILTIN)
