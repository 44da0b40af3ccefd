"""One digest for the weights a rank is about to load, so that the ranks of a split
instance can check they hold the same files (`mlx/weights_agreement.py`). Read from what
the store already knows rather than by hashing a model again: a stored model's manifest
(the sha256 of every file), or an imported model's record of the GGUF it came from; only a
small file outside the store (the model a Python package ships) is hashed here."""

import hashlib
from collections.abc import Iterable
from pathlib import Path

from skulk.models.mlx_import.provenance import PROVENANCE_FILE, ImportProvenance
from skulk.models.store.hashing import file_sha256
from skulk.models.store.manifest import StoreEntry, read_entry

# A single file outside the store (a model shipped in a Python package) is hashed: such
# files are small; anything bigger arrives through the store, with a manifest.
HASHED_FILE_LIMIT = 1 << 30


def files_digest(entry: StoreEntry) -> str:
    """sha256 over the sorted (name, sha256) pairs of the whole model's files: equal
    wherever the same files are. A pipeline stage's copy holds some of them and records
    the rest as its source advertised them (`StoreEntry.model_files`), so the ranks of a
    split instance agree whether each holds the whole model or only its stage, and ranks
    whose files differ anywhere in the model do not."""
    return _pairs_digest((f.name, f.sha256) for f in entry.whole_model_files)


def weights_digest(path: Path) -> str | None:
    """The digest of the weights at `path` (a store directory, an imported MLX directory
    or a GGUF file), or None when nothing records what they are."""
    directory = path if path.is_dir() else path.parent
    try:
        entry = read_entry(directory)
    except ValueError:
        entry = None
    if entry is not None:
        return files_digest(entry)
    provenance = directory / PROVENANCE_FILE
    if path.is_dir() and provenance.is_file():
        record = ImportProvenance.model_validate_json(provenance.read_bytes())
        return hashlib.sha256(f"import\0{record.source_sha256}\0{record.q_bits}".encode()
                              ).hexdigest()
    if path.is_file() and path.stat().st_size <= HASHED_FILE_LIMIT:
        return _pairs_digest([(path.name, file_sha256(path))])
    return None


def _pairs_digest(pairs: Iterable[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for name, sha256 in sorted(pairs):
        digest.update(f"{name}\0{sha256}\n".encode())
    return digest.hexdigest()
