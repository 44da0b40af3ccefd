"""What the weights endpoint answers: only files listed in a complete store manifest.

Paths are never joined from what a client sends: the directory must be a store entry's
own name and the file a name its manifest lists, so `..`, absolute paths, staging
directories and the manifest's own neighbours are all simply "not found".
"""

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from skulk.models.store.manifest import StoreEntry, read_entry

WEIGHTS_PREFIX = "/weights/"
MANIFESTS_PREFIX = "/manifests/"


@dataclass(frozen=True)
class ServedFile:
    """A file the endpoint may send, with the size and sha256 its manifest records."""

    path: Path
    size_bytes: int
    sha256: str


def _entry(models_dir: Path, directory: str) -> StoreEntry | None:
    if not directory or "/" in directory or "\\" in directory or directory.startswith("."):
        return None
    try:
        entry = read_entry(models_dir / directory)
    except (OSError, ValueError):
        return None
    return entry if entry is not None and entry.directory == directory else None


def served_manifest(models_dir: Path, url_path: str) -> StoreEntry | None:
    """The entry `/manifests/<store directory>` names, if it is complete."""
    if not url_path.startswith(MANIFESTS_PREFIX):
        return None
    return _entry(models_dir, unquote(url_path[len(MANIFESTS_PREFIX):]))


def served_file(models_dir: Path, url_path: str) -> ServedFile | None:
    """The file `/weights/<store directory>/<file name>` names, if a complete manifest
    lists it and it is on disk at the size listed; None otherwise."""
    if not url_path.startswith(WEIGHTS_PREFIX):
        return None
    directory, _, name = unquote(url_path[len(WEIGHTS_PREFIX):]).partition("/")
    entry = _entry(models_dir, directory)
    listed = None if entry is None else next((f for f in entry.files if f.name == name), None)
    if listed is None:
        return None
    root = (models_dir / directory).resolve()
    path = (root / listed.name).resolve()
    # Manifests are ours, but a link planted in the store must not lead outside it.
    if not path.is_relative_to(root) or not path.is_file() \
            or path.stat().st_size != listed.size_bytes:
        return None
    return ServedFile(path=path, size_bytes=listed.size_bytes, sha256=listed.sha256)
