"""`pull`: a model from the hub into the node's store, verified, resumable, atomic.

The files land in a staging directory (`.partial/<name>` under the store), each checked
against the sha256 the hub advertises (`huggingface_hub` keeps a file whose bytes do not
match without complaint: the check is ours). The card is derived from the weights, the
manifest written last, and the directory renamed into the store in one step. A pull
killed midway resumes from its staging directory; a disk that fills is reported and the
partial files removed, so nothing half-fetched is ever loaded.

A pull for a pipeline stage (`layers`) of a sharded safetensors model fetches the index
first, then only the weight files that stage needs (`layer_files.py`), into a directory
of its own (`<name>-layers-<start>-<end>`) whose manifest says which layers it serves.
"""

import errno
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skulk.models.store.derived_card import card_from_config, card_from_gguf
from skulk.models.store.directories import publish_directory, store_lock, sync_tree
from skulk.models.store.free_space import NotEnoughSpace, require_space
from skulk.models.store.hashing import file_git_sha1, file_sha256
from skulk.models.store.hub_client import download_file, list_repository
from skulk.models.store.hub_files import NoSuchWeights, RemoteFile, RepoListing, choose_files
from skulk.models.store.layer_files import (
    INDEX_FILE,
    Layers,
    files_for_layers,
    is_weight_file,
    layers_directory,
    weight_map_of,
)
from skulk.models.store.manifest import StoredFile, StoreEntry, read_entry, write_entry
from skulk.models.store.pull_progress import ProgressRecord, progress_path
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelFormat, ModelSource

PARTIAL_DIR = ".partial"
# Called with (bytes done, bytes in all) as a pull advances.
Progress = Callable[[int, int], None]


class CorruptFile(ValueError):
    """A fetched file's bytes do not match the hash its source advertised."""


@dataclass(frozen=True)
class PullRequest:
    """What to pull: a hub repository, and optionally which weights and under what id."""

    repo: str
    model_id: str | None = None
    format: ModelFormat | None = None
    quant: str | None = None
    # A catalogue card's GGUF file name or pattern: narrows the quantization's files.
    pattern: str | None = None
    # A pipeline stage's layers [start, end): only the files holding them (safetensors).
    layers: Layers | None = None


@dataclass(frozen=True)
class PullResult:
    entry: StoreEntry
    path: Path
    fetched: bool  # False: the store already held this commit's files


def default_model_id(repo: str) -> ModelId:
    """`Qwen/Qwen2.5-0.5B-Instruct-GGUF` → `qwen2.5-0.5b-instruct`."""
    name = repo.rsplit("/", 1)[-1].lower()
    return ModelId(re.sub(r"[-_.](gguf|mlx|safetensors)$", "", name))


def store_directory(model_id: str, format: ModelFormat, quant: str | None) -> str:
    suffix = f"-{quant.lower()}" if format == "gguf" and quant else ""
    return f"{model_id}-{format}{suffix}"


def pull(models_dir: Path, request: PullRequest, progress: Progress) -> PullResult:
    """Fetch the request's weights into `models_dir`; see the module docstring."""
    listing = list_repository(request.repo)
    format, quant, files = choose_files(listing, request.format, request.quant,
                                        request.pattern)
    model_id = ModelId(request.model_id) if request.model_id else default_model_id(request.repo)
    whole_name = store_directory(model_id, format, quant)
    # Only a sharded checkpoint can be fetched in part; any other is one stage's copy too.
    layers = request.layers if any(f.name == INDEX_FILE for f in files) else None
    name = layers_directory(whole_name, layers)
    target = models_dir / name
    with store_lock(models_dir, name):
        # A whole copy of this commit serves every stage.
        for held in dict.fromkeys((models_dir / whole_name, target)):
            existing = read_entry(held) if held.is_dir() else None
            if existing is not None and existing.revision == listing.revision:
                return PullResult(existing, held, fetched=False)
        staging = models_dir / PARTIAL_DIR / name
        all_files = files
        if layers is not None:
            files = _stage_files(listing, files, staging, layers)
        total = sum(f.size_bytes for f in files)
        require_space(models_dir, model_id, total - _bytes_present(staging, files))
        # The node on this data dir shows the pull's progress from this record.
        record = ProgressRecord(progress_path(models_dir / PARTIAL_DIR, name), model_id,
                                listing.repo, progress)
        try:
            stored = _fetch_all(listing, files, staging, total, record)
        except OSError as error:
            if error.errno == errno.ENOSPC and not isinstance(error, NotEnoughSpace):
                shutil.rmtree(staging, ignore_errors=True)
                raise NotEnoughSpace(
                    f"the disk filled while fetching {model_id} into {models_dir}; the "
                    f"partial files were removed. It needs {total / 1e9:.2f} GB") from error
            raise
        finally:
            record.remove()
        model_files = None if layers is None else _advertised(stored, all_files)
        weights = model_files or stored
        entry = StoreEntry(directory=name, model_id=model_id, format=format,
                           repo=listing.repo, revision=listing.revision, quant=quant,
                           files=stored, layers=layers, model_files=model_files,
                           card=_card(model_id, format, name, staging, weights,
                                      ModelSource(format=format, filename=whole_name,
                                                  size_bytes=0, repo=listing.repo,
                                                  quant=quant)))
        shutil.rmtree(staging / ".cache", ignore_errors=True)
        write_entry(staging, entry)
        sync_tree(staging)
        publish_directory(staging, target, replace=True)
    return PullResult(entry, target, fetched=True)


def _stage_files(listing: RepoListing, files: list[RemoteFile], staging: Path,
                 layers: Layers) -> list[RemoteFile]:
    """`files` without the weight files a stage of `layers` does not need, read from the
    index (fetched first). A weight file the hub gives no sha256 for is fetched anyway:
    the stage's manifest must record every file's sha256 (`StoreEntry.model_files`)."""
    index = next(f for f in files if f.name == INDEX_FILE)
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / INDEX_FILE
    if not (path.is_file() and path.stat().st_size == index.size_bytes):
        download_file(listing, index, staging, lambda _: None)
    verify(path, index)
    needed = files_for_layers(weight_map_of(path.read_bytes()), *layers)
    listed = {f.name for f in files}
    if not needed <= listed:
        raise NoSuchWeights(f"{listing.repo}'s {INDEX_FILE} names files the repository "
                            f"does not have: {', '.join(sorted(needed - listed))}")
    return [f for f in files
            if not is_weight_file(f.name) or f.name in needed or f.sha256 is None]


def _advertised(stored: list[StoredFile], files: list[RemoteFile]) -> list[StoredFile]:
    """Every file of the whole model: those fetched as verified, the rest as the hub
    advertised them (each has a sha256: `_stage_files` fetched those without one)."""
    held = {f.name: f for f in stored}
    return sorted((held.get(f.name) or StoredFile(name=f.name, size_bytes=f.size_bytes,
                                                  sha256=f.sha256 or "")
                   for f in files), key=lambda f: f.name)


def _bytes_present(staging: Path, files: list[RemoteFile]) -> int:
    """Bytes a resumed pull need not fetch again: whole files and partial downloads."""
    if not staging.is_dir():
        return 0
    whole = sum(f.size_bytes for f in files
                if (staging / f.name).is_file()
                and (staging / f.name).stat().st_size == f.size_bytes)
    partial = sum(p.stat().st_size for p in staging.glob("**/*.part"))
    return whole + partial


class _Tally:
    """Bytes done across a pull's files; a retried file never counts past its size."""

    def __init__(self, total: int, progress: Progress) -> None:
        self.total, self.progress = total, progress
        self.finished = 0  # bytes of the files already fetched
        self.current = 0  # bytes of the file being fetched
        self.current_size = 0

    def start(self, size: int) -> None:
        self.current, self.current_size = 0, size

    def count(self, size: int) -> None:
        self.current = min(self.current + size, self.current_size)
        self.progress(self.finished + self.current, self.total)

    def finish(self) -> None:
        self.finished += self.current_size
        self.current = self.current_size = 0
        self.progress(self.finished, self.total)


def _fetch_all(listing: RepoListing, files: list[RemoteFile], staging: Path, total: int,
               progress: Progress) -> list[StoredFile]:
    staging.mkdir(parents=True, exist_ok=True)
    tally = _Tally(total, progress)
    stored = []
    for file in files:
        tally.start(file.size_bytes)
        path = staging / file.name
        if not (path.is_file() and path.stat().st_size == file.size_bytes):
            path = download_file(listing, file, staging, tally.count)
        tally.finish()
        stored.append(verify(path, file))
    return stored


def verify(path: Path, file: RemoteFile) -> StoredFile:
    """Check a fetched file against its advertised hash; a mismatch removes the file and
    raises CorruptFile."""
    sha256 = file_sha256(path)
    if file.sha256 is not None:
        expected, actual, kind = file.sha256, sha256, "sha256"
    elif file.git_sha1 is not None:
        expected, actual, kind = file.git_sha1, file_git_sha1(path), "git blob id"
    else:
        expected = actual = kind = ""
    if actual != expected:
        path.unlink()
        raise CorruptFile(f"{file.name}: its {kind} is {actual}, but the source advertised "
                          f"{expected}; the file was removed and will not be loaded")
    return StoredFile(name=file.name, size_bytes=path.stat().st_size, sha256=sha256)


def _card(model_id: ModelId, format: ModelFormat, name: str, staging: Path,
          stored: list[StoredFile], hub: ModelSource) -> ModelCard:
    """The card derived from the pulled files; its source names the hub repository and
    quantization, so a node that lacks the files can fetch them there too. `stored` is
    the whole model's files (a stage's copy sizes the model, not its own part)."""
    if format == "gguf":
        first = sorted(f.name for f in stored if f.name.endswith(".gguf"))[0]
        source = hub.model_copy(update={"filename": f"{name}/{first}",
                                        "size_bytes": sum(f.size_bytes for f in stored)})
        return card_from_gguf(model_id, staging / first, source)
    source = hub.model_copy(update={"size_bytes": sum(
        f.size_bytes for f in stored if f.name.endswith(".safetensors"))})
    return card_from_config(model_id, staging, source)
