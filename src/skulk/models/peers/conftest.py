"""A small store and two test clusters' trust material, for the weights endpoint's tests."""

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from skulk.models.store.manifest import StoredFile, StoreEntry, write_entry
from skulk.node_identity import load_or_create_identity
from skulk.shared.types.ids import ModelId, NodeId
from skulk.testing.cluster_trust import make_member
from skulk.trust.files import TlsFiles, TrustFiles

ENTRY_DIR = "tiny-gguf"


@dataclass(frozen=True)
class Store:
    models_dir: Path
    entry: StoreEntry
    contents: dict[str, bytes]


def write_store(models_dir: Path, contents: dict[str, bytes],
                directory: str = ENTRY_DIR) -> StoreEntry:
    """A complete store entry holding `contents` (name → bytes)."""
    root = models_dir / directory
    files = []
    for name, data in contents.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
        files.append(StoredFile(name=name, size_bytes=len(data),
                                sha256=hashlib.sha256(data).hexdigest()))
    entry = StoreEntry(directory=directory, model_id=ModelId("tiny"), format="gguf",
                       files=files)
    write_entry(root, entry)
    return entry


@pytest.fixture
def store(tmp_path: Path) -> Store:
    contents = {"model.gguf": os.urandom(3 << 20) + b"tail", "sub/tokenizer.json": b"{}"}
    models_dir = tmp_path / "server" / "models"
    return Store(models_dir, write_store(models_dir, contents), contents)


@dataclass(frozen=True)
class Member:
    data_dir: Path
    node_id: NodeId

    @property
    def tls(self) -> TlsFiles:
        return TrustFiles(self.data_dir).tls_files()


def member_of(authority_dir: Path, data_dir: Path) -> Member:
    anyio.run(make_member, authority_dir, data_dir)
    return Member(data_dir, load_or_create_identity(data_dir).node_id)


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[Member, Member]:
    """A serving member and a fetching member of one cluster."""
    authority = tmp_path / "authority"
    return member_of(authority, tmp_path / "a"), member_of(authority, tmp_path / "b")
