"""`add`: a model already on this machine into the node's store, hashed, with its card.

A `.gguf` file or a Hugging Face model directory (config.json, *.safetensors, a
tokenizer) is hard-linked into a staging directory (copied when the store is on another
file system), or, with `link`, symbolically linked so the weights stay where they are.
Each file is hashed (sha256), the card derived from the weights, the manifest written
last and the directory renamed into the store in one step, like a pull.
"""

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skulk.models.store.derived_card import card_from_config, card_from_gguf
from skulk.models.store.directories import publish_directory, store_lock, sync_tree
from skulk.models.store.free_space import require_space
from skulk.models.store.hashing import file_sha256
from skulk.models.store.manifest import StoredFile, StoreEntry, write_entry
from skulk.models.store.pull import PARTIAL_DIR, store_directory
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelFormat, ModelSource

# A built-in card by id or alias, or None: an added model must not take its name.
BuiltinCard = Callable[[str], ModelCard | None]
_MODEL_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")


@dataclass(frozen=True)
class AddRequest:
    """What to add: a path, optionally the id to serve it under, and whether to copy."""

    path: Path
    model_id: str | None = None
    link: bool = False


@dataclass(frozen=True)
class AddResult:
    entry: StoreEntry
    path: Path
    linked: bool  # how the files got there: True for hard or symbolic links


def default_model_id(path: Path) -> ModelId:
    """`SmolLM2-135M-Instruct.Q4_1.gguf` → `smollm2-135m-instruct.q4_1`."""
    name = path.name.removesuffix(".gguf") if path.is_file() else path.name
    return ModelId(re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._"))


def model_files(path: Path) -> tuple[ModelFormat, list[Path]]:
    """The format and files of a model on disk; ValueError says what is missing."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ValueError(f"{path} is not a .gguf file; give a .gguf file or a Hugging "
                             "Face model directory")
        return "gguf", [path]
    names = {p.name for p in path.iterdir()}
    missing = [what for what, present in [
        ("config.json", "config.json" in names),
        ("*.safetensors", any(n.endswith(".safetensors") for n in names)),
        (" or ".join(_TOKENIZER_FILES), any(n in names for n in _TOKENIZER_FILES)),
    ] if not present]
    if missing:
        raise ValueError(f"{path} is not a Hugging Face model directory: it lacks "
                         f"{', '.join(missing)}")
    return "mlx", sorted(p for p in path.rglob("*") if p.is_file()
                         and not any(part.startswith(".") for part in
                                     p.relative_to(path).parts))


def add(models_dir: Path, request: AddRequest, builtin: BuiltinCard) -> AddResult:
    """Add the request's model to `models_dir`; see the module docstring."""
    source = request.path.expanduser().absolute()
    format, files = model_files(source)
    model_id = ModelId(request.model_id.lower()) if request.model_id \
        else default_model_id(source)
    if not _MODEL_ID.fullmatch(model_id):
        raise ValueError(f"{model_id!r} is not a usable model id: use lower-case letters, "
                         "digits, '.', '_' and '-' (--model-id)")
    taken = builtin(model_id)
    if taken is not None:
        raise ValueError(f"{model_id!r} names the built-in model {taken.model_id!r}; add "
                         "it under another id (--model-id)")
    name = store_directory(model_id, format, None)
    target = models_dir / name
    models_dir.mkdir(parents=True, exist_ok=True)
    with store_lock(models_dir, name):
        if target.exists():
            raise FileExistsError(f"{model_id} is already in the store at {target}; remove "
                                  f"it first (skulk models remove {model_id})")
        staging = models_dir / PARTIAL_DIR / name
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            entry = _stage(staging, source, files, model_id, format, name, request.link,
                           models_dir)
            write_entry(staging, entry)
            sync_tree(staging)
            publish_directory(staging, target, replace=False)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    linked = request.link or all((target / f.name).stat().st_nlink > 1 for f in entry.files)
    return AddResult(entry, target, linked)


def _stage(staging: Path, source: Path, files: list[Path], model_id: ModelId,
           format: ModelFormat, name: str, link: bool, models_dir: Path) -> StoreEntry:
    root = source.parent if format == "gguf" else source
    if not link and not _same_device(source, models_dir):
        require_space(models_dir, model_id, sum(f.stat().st_size for f in files))
    stored = []
    for file in files:
        relative = file.relative_to(root)
        destination = staging / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        _place(file, destination, link)
        stored.append(StoredFile(name=str(relative), size_bytes=file.stat().st_size,
                                 sha256=file_sha256(file)))
    return StoreEntry(directory=name, model_id=model_id, format=format, files=stored,
                      card=_card(model_id, format, name, staging, stored),
                      linked_from=str(source) if link else None)


def _place(file: Path, destination: Path, link: bool) -> None:
    if link:
        destination.symlink_to(file)
        return
    try:
        os.link(file, destination)
    except OSError:  # another file system, or one without hard links: copy
        shutil.copy2(file, destination)


def _same_device(source: Path, models_dir: Path) -> bool:
    return source.stat().st_dev == models_dir.stat().st_dev


def _card(model_id: ModelId, format: ModelFormat, name: str, staging: Path,
          stored: list[StoredFile]) -> ModelCard:
    try:
        if format == "gguf":
            gguf = stored[0].name
            source = ModelSource(format="gguf", filename=f"{name}/{gguf}",
                                 size_bytes=stored[0].size_bytes)
            return card_from_gguf(model_id, staging / gguf, source)
        size = sum(f.size_bytes for f in stored if f.name.endswith(".safetensors"))
        return card_from_config(model_id, staging, ModelSource(
            format="mlx", filename=name, size_bytes=size))
    except (ValueError, KeyError) as error:
        raise ValueError(f"cannot derive a model card for {model_id}: {error}") from error
