"""`remove`: a model out of the node's store. Its directory is renamed away first, so
readers see the model whole or not at all; files added with `--link` stay where they are
(only the links are removed)."""

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from skulk.models.store.directories import store_lock
from skulk.models.store.manifest import StoreEntry, stored_entries
from skulk.shared.types.model_cards import ModelCard


class NotInStore(LookupError):
    """The id names nothing this store holds; the message says why and what to do."""


def remove(models_dir: Path, model_id: str,
           builtin: Callable[[str], ModelCard | None]) -> list[StoreEntry]:
    """Remove every stored copy of `model_id` (one per format, and any pipeline stage's
    copies) and return their entries."""
    wanted = model_id.lower()
    entries = [e for e in stored_entries(models_dir)
               if e.model_id.lower() == wanted or e.directory == model_id]
    if not entries:
        card = builtin(model_id)
        if card is not None:
            raise NotInStore(
                f"{model_id} is a built-in model: its weights ship with Skulk "
                f"({', '.join(s.package or s.filename for s in card.sources)}), not in the "
                f"store at {models_dir}, so there is nothing to remove")
        raise NotInStore(f"no model {model_id!r} in the store at {models_dir}; "
                         "`skulk models list` shows what is there")
    for entry in entries:
        with store_lock(models_dir, entry.directory):
            directory = models_dir / entry.directory
            if not directory.exists():
                continue  # removed by someone else meanwhile
            retired = directory.with_name(f".{entry.directory}.removed-{os.getpid()}")
            directory.rename(retired)
            shutil.rmtree(retired)
    return entries
