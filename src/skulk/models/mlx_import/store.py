"""Imported MLX models in the node's model store: naming, locking, atomic publication.

A model directory appears under its final name only once complete: the import writes
into a hidden staging directory beside it and renames it in one step. A per-name lock
file keeps two runners on one node from importing the same model at once.
"""

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skulk import __version__
from skulk.models.catalog import ModelCatalog
from skulk.models.mlx_import.gguf_import import import_gguf
from skulk.models.mlx_import.hf_import import import_hf_directory, is_hf_directory
from skulk.models.mlx_import.provenance import (
    PROVENANCE_FILE,
    ImportProvenance,
    source_digest,
)
from skulk.models.store.directories import publish_directory, store_lock, sync_tree
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard

SUPPORTED_Q_BITS = (4, 8)


@dataclass(frozen=True)
class ImportResult:
    """Where the model is, and whether this call made it (False: it was already there)."""

    path: Path
    imported: bool


def store_name(card: ModelCard | None, model_id: str, q_bits: int | None) -> str:
    """The store directory of a model: the card's `mlx` source filename when it has one,
    else `<model_id>-mlx`; quantized copies add `-q<bits>`."""
    source = card.source_for("mlx") if card is not None else None
    base = source.filename if source is not None else f"{model_id}-mlx"
    return base if q_bits is None else f"{base}-q{q_bits}"


def source_format(source: Path) -> Literal["gguf", "hf"]:
    """`gguf` for a .gguf file, `hf` for a directory with config.json; else ValueError."""
    if source.is_file() and source.suffix.lower() == ".gguf":
        return "gguf"
    if is_hf_directory(source):
        return "hf"
    raise ValueError(f"{source} is neither a .gguf file nor a directory with config.json")


def _convert(
    source: Path, staging: Path, model_id: str, q_bits: int | None,
) -> ImportProvenance:
    kind = source_format(source)
    started = time.time()
    if kind == "gguf":
        written = import_gguf(source, staging, q_bits)
    else:
        written = import_hf_directory(source, staging, q_bits)
    digest, size = source_digest(source)
    return ImportProvenance(
        model_id=ModelId(model_id), source_path=str(source.resolve()), source_format=kind,
        source_sha256=digest, source_bytes=size, q_bits=q_bits,
        weight_files=written.files, weight_bytes=written.weight_bytes,
        skulk_version=__version__, imported_at=started,
    )


def import_to_store(
    source: Path, models_dir: Path, name: str, model_id: str, q_bits: int | None,
    replace: bool = False,
) -> ImportResult:
    """Import `source` as `models_dir/name`, atomically; returns the existing directory
    untouched unless `replace`."""
    if q_bits is not None and q_bits not in SUPPORTED_Q_BITS:
        raise ValueError(f"--q-bits must be one of {SUPPORTED_Q_BITS}, not {q_bits}")
    target = models_dir / name
    with store_lock(models_dir, name):
        if target.is_dir() and not replace:
            return ImportResult(target, imported=False)
        # Holding the lock, any staging directory for this name is a crashed import's.
        for stale in models_dir.glob(f".{name}.staging-*"):
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.staging-", dir=models_dir))
        try:
            provenance = _convert(source, staging, model_id, q_bits)
            (staging / PROVENANCE_FILE).write_text(provenance.model_dump_json(indent=2) + "\n")
            staging.chmod(0o755)  # mkdtemp makes it private; the store is not
            sync_tree(staging)
            publish_directory(staging, target, replace)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return ImportResult(target, imported=True)


def read_provenance(model_dir: Path) -> ImportProvenance | None:
    """The import record of a store directory, or None when it was not imported."""
    path = model_dir / PROVENANCE_FILE
    if not path.is_file():
        return None
    return ImportProvenance.model_validate_json(path.read_text())


def ensure_mlx_model(catalog: ModelCatalog, card: ModelCard, q_bits: int | None = None) -> Path:
    """The MLX directory of `card`, importing it from the card's local GGUF on first use.

    Blocks for the length of an import (seconds for small models): call it from the
    runner process or a worker thread, not the event loop.
    """
    name = store_name(card, card.model_id, q_bits)
    target = catalog.models_dir / name
    if target.is_dir():
        return target
    gguf = catalog.local_path(card, "gguf")
    if gguf is None:
        raise FileNotFoundError(
            f"{card.model_id} has no MLX weights at {target} and no GGUF to import them "
            f"from: run `skulk models import PATH --model-id {card.model_id}`")
    return import_to_store(gguf, catalog.models_dir, name, card.model_id, q_bits).path
