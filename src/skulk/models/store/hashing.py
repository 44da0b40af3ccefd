"""Hashes of stored files, streamed: weights do not fit in memory twice."""

import hashlib
from pathlib import Path

_BLOCK_BYTES = 4 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def file_git_sha1(path: Path) -> str:
    """The git blob id of a file: what the hub advertises for files kept outside LFS."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()
