from pathlib import Path

from skulk.models.mlx_import.provenance import PROVENANCE_FILE, ImportProvenance
from skulk.models.store.hashing import file_sha256
from skulk.models.store.manifest import StoredFile, StoreEntry, write_entry
from skulk.shared.types.ids import ModelId
from skulk.worker.weights_digest import files_digest, weights_digest


def stored(directory: Path, content: bytes) -> StoreEntry:
    directory.mkdir(parents=True)
    (directory / "model.gguf").write_bytes(content)
    entry = StoreEntry(directory=directory.name, model_id=ModelId("m"), format="gguf",
                       files=[StoredFile(name="model.gguf", size_bytes=len(content),
                                         sha256=file_sha256(directory / "model.gguf"))])
    write_entry(directory, entry)
    return entry


def imported(directory: Path, source_sha256: str, q_bits: int | None) -> Path:
    directory.mkdir(parents=True)
    (directory / PROVENANCE_FILE).write_text(ImportProvenance(
        model_id=ModelId("m"), source_path="/x.gguf", source_format="gguf",
        source_sha256=source_sha256, source_bytes=10, q_bits=q_bits, weight_files=[],
        weight_bytes=0, skulk_version="0", imported_at=0.0).model_dump_json())
    return directory


def test_a_stored_model_is_known_by_its_manifest_alone(tmp_path: Path) -> None:
    entry = stored(tmp_path / "a", b"weights")
    (tmp_path / "a" / "model.gguf").write_bytes(b"changed after the manifest")
    assert weights_digest(tmp_path / "a") == files_digest(entry)
    assert weights_digest(tmp_path / "a" / "model.gguf") == files_digest(entry)


def test_the_same_file_in_a_package_and_in_a_store_agrees(tmp_path: Path) -> None:
    entry = stored(tmp_path / "store" / "copy", b"same bytes")
    loose = tmp_path / "package" / "model.gguf"
    loose.parent.mkdir()
    loose.write_bytes(b"same bytes")
    assert weights_digest(loose) == files_digest(entry)
    loose.write_bytes(b"other bytes")
    assert weights_digest(loose) != files_digest(entry)


def test_imports_agree_when_their_source_and_width_do(tmp_path: Path) -> None:
    first = weights_digest(imported(tmp_path / "a", "ab" * 32, 4))
    assert first is not None
    assert weights_digest(imported(tmp_path / "b", "ab" * 32, 4)) == first
    assert weights_digest(imported(tmp_path / "c", "ab" * 32, None)) != first
    assert weights_digest(imported(tmp_path / "d", "cd" * 32, 4)) != first


def test_a_directory_nothing_describes_has_no_digest(tmp_path: Path) -> None:
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "weights.safetensors").write_bytes(b"x")
    assert weights_digest(tmp_path / "loose") is None
