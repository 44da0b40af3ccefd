"""What the store holds of one model: its files with their sha256, where they came from,
and the card derived from them. A directory counts as stored only once its manifest is
written, which happens last, after every file is verified."""

from pathlib import Path

from pydantic import Field

from skulk.durable_files import write_file_atomically
from skulk.models.store.layer_files import covers
from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelFormat

MANIFEST_FILE = ".skulk-store.json"


class StoredFile(WireModel):
    """One verified file of a stored model."""

    name: str = Field(description="Path inside the model's store directory.")
    size_bytes: int = Field(ge=0, description="Size on disk.")
    sha256: str = Field(description="sha256 of the bytes, hex.")


class StoreEntry(WireModel):
    """One model in a node's store."""

    directory: str = Field(description="The model's directory under the store.")
    model_id: ModelId = Field(description="The model these weights are.")
    format: ModelFormat = Field(description="The weights' format.")
    repo: str | None = Field(default=None, description="Hub repository they came from.")
    revision: str | None = Field(default=None, description="Hub commit they came from.")
    quant: str | None = Field(default=None, description="GGUF quantization, e.g. `Q4_K_M`.")
    files: list[StoredFile] = Field(description="Every file, verified.")
    layers: tuple[int, int] | None = Field(
        default=None, description="A pipeline stage's copy: it holds the files of layers "
        "[start, end) and of every tensor outside the layers (see `layer_files.py`). None: "
        "the whole model. Only a whole copy serves a whole load.")
    model_files: list[StoredFile] | None = Field(
        default=None, description="A stage's copy: every file of the whole model as its "
        "source advertised them (the held ones verified), so ranks holding different "
        "stages of the same model can check they agree.")
    card: ModelCard | None = Field(
        default=None, description="Card derived from the files: the card of a model no "
        "built-in card describes, and the hub's corrections to one that does (real sizes, "
        "config figures).")
    linked_from: str | None = Field(
        default=None, description="Added with `--link`: the absolute path of the file or "
        "directory the weights stay in. The store directory then holds symbolic links to "
        "those files (so every reader finds them the usual way); moving or changing them "
        "breaks the entry, and removing the entry leaves them alone.")

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)

    @property
    def whole_model_files(self) -> list[StoredFile]:
        """The whole model's files: those held, or for a stage's copy those advertised."""
        return self.files if self.model_files is None else self.model_files

    def covers(self, layers: tuple[int, int] | None) -> bool:
        """Whether this copy serves a load of `layers` (None: the whole model)."""
        return covers(self.layers, layers)


def read_entry(directory: Path) -> StoreEntry | None:
    """The entry of a store directory, or None when it is not a complete stored model."""
    path = directory / MANIFEST_FILE
    if not path.is_file():
        return None
    return StoreEntry.model_validate_json(path.read_bytes())


def write_entry(directory: Path, entry: StoreEntry) -> None:
    write_file_atomically(directory / MANIFEST_FILE, entry.model_dump_json(indent=1).encode())


def stored_entries(models_dir: Path) -> list[StoreEntry]:
    """Every complete model in the store, by directory name; unreadable manifests are
    skipped (a half-written one cannot exist: manifests are written atomically)."""
    if not models_dir.is_dir():
        return []
    entries = []
    for directory in sorted(p for p in models_dir.iterdir() if p.is_dir()):
        try:
            entry = read_entry(directory)
        except ValueError:
            continue
        if entry is not None:
            entries.append(entry)
    return entries
