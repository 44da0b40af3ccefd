from pathlib import Path

import pytest

from skulk.models.peers.conftest import Store, write_store
from skulk.models.peers.serving import served_file, served_manifest


def test_a_listed_file_is_served_with_its_manifest_hash(store: Store) -> None:
    served = served_file(store.models_dir, "/weights/tiny-gguf/model.gguf")
    assert served is not None
    assert served.sha256 == store.entry.files[0].sha256
    assert served.size_bytes == len(store.contents["model.gguf"])
    nested = served_file(store.models_dir, "/weights/tiny-gguf/sub%2Ftokenizer.json")
    assert nested is not None and nested.path.read_bytes() == b"{}"


def test_the_manifest_is_served_by_its_directory(store: Store) -> None:
    assert served_manifest(store.models_dir, "/manifests/tiny-gguf") == store.entry
    assert served_manifest(store.models_dir, "/manifests/other") is None


@pytest.mark.parametrize("path", [
    "/weights/tiny-gguf/.skulk-store.json",  # on disk, not listed
    "/weights/tiny-gguf/unlisted.bin",
    "/weights/tiny-gguf/../tiny-gguf/model.gguf",
    "/weights/..%2Fsecret/x",
    "/weights/%2E%2E/secret",
    "/weights/tiny-gguf/sub/../model.gguf",
    "/weights//etc/passwd",
    "/weights/.partial/model.gguf",
    "/model.gguf",
])
def test_anything_not_listed_is_not_found(store: Store, path: str) -> None:
    (store.models_dir / "tiny-gguf" / "unlisted.bin").write_bytes(b"x")
    (store.models_dir / "secret").mkdir()
    (store.models_dir / "secret" / "x").write_bytes(b"x")
    assert served_file(store.models_dir, path) is None


def test_an_incomplete_entry_serves_nothing(tmp_path: Path) -> None:
    write_store(tmp_path, {"a.bin": b"abc"})
    (tmp_path / "tiny-gguf" / ".skulk-store.json").unlink()
    assert served_file(tmp_path, "/weights/tiny-gguf/a.bin") is None


def test_a_file_whose_size_changed_is_not_served(store: Store) -> None:
    with (store.models_dir / "tiny-gguf" / "model.gguf").open("ab") as handle:
        handle.write(b"more")
    assert served_file(store.models_dir, "/weights/tiny-gguf/model.gguf") is None


def test_a_listed_name_that_is_a_link_out_of_the_store_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"abc")
    write_store(tmp_path / "models", {"a.bin": b"abc"})
    link = tmp_path / "models" / "tiny-gguf" / "a.bin"
    link.unlink()
    link.symlink_to(outside)
    assert served_file(tmp_path / "models", "/weights/tiny-gguf/a.bin") is None
