"""`PeerSource`: a model's files copied from a peer's store into this node's, the way
`pull` fills it from the hub: staged, verified file by file, published in one rename.
For a pipeline stage (`layers`) of a sharded safetensors model, only the files the stage
needs are copied (from the peer's whole copy, or a stage copy covering them), into a
stage copy of this node's own."""

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skulk.models.peers.client import PeerUnavailable, fetch_from_peer, fetch_manifest
from skulk.models.peers.holders import PeerHolding
from skulk.models.store.directories import publish_directory, store_lock, sync_tree
from skulk.models.store.free_space import require_space
from skulk.models.store.hashing import file_sha256
from skulk.models.store.layer_files import (
    INDEX_FILE,
    Layers,
    files_for_layers,
    is_weight_file,
    layers_directory,
    weight_map_of,
)
from skulk.models.store.manifest import StoredFile, StoreEntry, read_entry, write_entry
from skulk.models.store.pull import PARTIAL_DIR
from skulk.shared.types.telemetry import HeldModel
from skulk.trust.files import TlsFiles

Progress = Callable[[int, int], None]


class PeerDisagrees(ValueError):
    """A peer's manifest does not list the files its telemetry advertised."""


@dataclass(frozen=True)
class PeerSource:
    """One peer holding a model, reached on its base URLs in order; `tls` None on an
    insecure cluster; `layers` a pipeline stage's range (None: the whole model).
    Implements the worker's `WeightSource`."""

    holding: PeerHolding
    tls: TlsFiles | None
    layers: Layers | None = None

    @property
    def label(self) -> str:
        return f"peer {self.holding.node_id}"

    def fetch(self, models_dir: Path, progress: Progress) -> StoreEntry:
        """Copy the files of the held entry (a stage's only, given `layers`) into
        `models_dir`, verified; the manifest is the peer's (with the card derived there),
        narrowed to the stage's files for a stage."""
        held = self.holding.held
        # Only a sharded checkpoint can be copied in part.
        layers = self.layers if any(f.name == INDEX_FILE for f in held.files) else None
        name = layers_directory(held.directory, layers)
        target = models_dir / name
        with store_lock(models_dir, name):
            existing = read_entry(target) if target.is_dir() else None
            if existing is not None and layers is None and _same_files(existing.files, held):
                return existing
            url_base, entry = self._manifest()
            staging = models_dir / PARTIAL_DIR / name
            if layers is not None:
                entry = self._stage_entry(url_base, entry, staging, name, layers)
                if existing is not None and existing.files == entry.files:
                    return existing
            self._copy(url_base, entry, models_dir, staging, progress)
            shutil.rmtree(staging / ".cache", ignore_errors=True)  # a hub pull's leftovers
            write_entry(staging, entry)
            sync_tree(staging)
            publish_directory(staging, target, replace=True)
        return entry

    def _copy(self, url_base: str, entry: StoreEntry, models_dir: Path, staging: Path,
              progress: Progress) -> None:
        """Every file of `entry` into `staging`, keeping what an earlier attempt left."""
        total = entry.size_bytes
        done = _keep_verified(staging, entry.files)
        require_space(models_dir, entry.model_id, total - done - _partial_bytes(staging))
        progress(done, total)
        for file in entry.files:
            if (staging / file.name).is_file():
                continue

            def count(size: int) -> None:
                nonlocal done
                done += size
                progress(done, total)

            done += _part_bytes(staging, file)
            fetch_from_peer(url_base, self.tls, self.holding.held.directory, file, staging,
                            count, peer_node=self.holding.node_id)

    def _stage_entry(self, url_base: str, entry: StoreEntry, staging: Path, name: str,
                     layers: Layers) -> StoreEntry:
        """The manifest of a stage's copy: the peer's, with the weight files the stage
        does not need left out (read from the index, copied first)."""
        index = next(f for f in entry.files if f.name == INDEX_FILE)
        _keep_verified(staging, [index])
        if not (staging / INDEX_FILE).is_file():
            fetch_from_peer(url_base, self.tls, self.holding.held.directory, index, staging,
                            lambda _: None, peer_node=self.holding.node_id)
        needed = files_for_layers(weight_map_of((staging / INDEX_FILE).read_bytes()),
                                  *layers)
        missing = needed - {f.name for f in entry.files}
        if missing:
            raise PeerDisagrees(f"{self.label}'s copy {entry.directory} lacks "
                                f"{', '.join(sorted(missing))}, which layers "
                                f"[{layers[0]}, {layers[1]}) need")
        return entry.model_copy(update={
            "directory": name, "layers": layers, "model_files": entry.whole_model_files,
            "files": [f for f in entry.files if not is_weight_file(f.name) or f.name in needed]})

    def _manifest(self) -> tuple[str, StoreEntry]:
        """The first base URL that answers, and the manifest it serves (which must list
        exactly the files the peer's telemetry advertised)."""
        failures = []
        for url_base in self.holding.base_urls:
            try:
                entry = fetch_manifest(url_base, self.tls, self.holding.held.directory,
                                       peer_node=self.holding.node_id)
            except PeerUnavailable as error:
                failures.append(f"{url_base}: {error}")
                continue
            if not _same_files(entry.files, self.holding.held) \
                    or entry.model_id != self.holding.held.model_id \
                    or entry.format != self.holding.held.format:
                raise PeerDisagrees(f"{self.label} serves a manifest of "
                                    f"{self.holding.held.directory} that differs from what "
                                    "it advertised; it may have just replaced the model")
            return url_base, entry
        raise PeerUnavailable(f"{self.label} answered on none of its addresses: "
                              + "; ".join(failures))


def _same_files(files: list[StoredFile], held: HeldModel) -> bool:
    return sorted((f.name, f.size_bytes, f.sha256) for f in files) == \
        sorted((f.name, f.size_bytes, f.sha256) for f in held.files)


def _keep_verified(staging: Path, files: list[StoredFile]) -> int:
    """Bytes of files a former attempt left whole in `staging` and that still verify; a
    whole file that does not verify is removed (it will be fetched again)."""
    kept = 0
    for file in files:
        path = staging / file.name
        if not path.is_file():
            continue
        if path.stat().st_size == file.size_bytes and file_sha256(path) == file.sha256:
            kept += file.size_bytes
        else:
            path.unlink()
    return kept


def _part_bytes(staging: Path, file: StoredFile) -> int:
    part = staging / f"{file.name}.part"
    return min(part.stat().st_size, file.size_bytes) if part.is_file() else 0


def _partial_bytes(staging: Path) -> int:
    return sum(p.stat().st_size for p in staging.glob("**/*.part")) if staging.is_dir() else 0
