"""`skulk models remove ID`: a model out of this node's store. A node running on the same
data dir tells the cluster, and the card goes once no node's store holds the model."""

import argparse
import sys
from pathlib import Path

from skulk.cli.units import size_text
from skulk.paths import default_data_dir


def add_remove_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_id", help="the model's id (as `skulk models list` shows it)")
    parser.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS,
                        help="node data dir (models are in DATA_DIR/models)")


def run_remove(args: argparse.Namespace) -> int:
    """Carry out `skulk models remove`; errors go to stderr with exit status 1."""
    from skulk.models.catalog import ModelCatalog
    from skulk.models.store.remove import NotInStore, remove

    data_dir: Path = getattr(args, "data_dir", None) or default_data_dir()
    catalog = ModelCatalog.builtin(data_dir / "models")
    try:
        removed = remove(catalog.models_dir, args.model_id, catalog.builtin_card)
    except (NotInStore, OSError) as error:
        print(f"skulk: remove failed: {error}", file=sys.stderr)
        return 1
    for entry in removed:
        kept = f" (its files stay in {entry.linked_from})" if entry.linked_from else ""
        print(f"removed {entry.model_id} ({entry.format}, {size_text(entry.size_bytes)}) "
              f"from {catalog.models_dir / entry.directory}{kept}")
    return 0
