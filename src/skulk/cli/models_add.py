"""`skulk models add PATH`: a model file or directory on this machine into the node's
store, hashed, with a card derived from it. A node running on the same data dir
announces it to the cluster within a second or so."""

import argparse
import sys
from pathlib import Path

from skulk.cli.units import size_text
from skulk.paths import default_data_dir


def add_add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path,
                        help="a .gguf file, or a Hugging Face model directory (config.json, "
                             "*.safetensors and tokenizer files)")
    parser.add_argument("--model-id", default=None,
                        help="the id to serve it under (default: from the file or directory "
                             "name, in lower case)")
    parser.add_argument("--link", action="store_true",
                        help="leave the files where they are: the store keeps symbolic links "
                             "to them and records their path (moving or editing them breaks "
                             "the entry; `models remove` leaves them alone). Default: hard "
                             "links, or a copy when the store is on another file system")
    parser.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS,
                        help="node data dir (models go to DATA_DIR/models)")


def run_add(args: argparse.Namespace) -> int:
    """Carry out `skulk models add`; errors go to stderr with exit status 1."""
    from skulk.models.catalog import ModelCatalog
    from skulk.models.store.add import AddRequest, add

    data_dir: Path = getattr(args, "data_dir", None) or default_data_dir()
    catalog = ModelCatalog.builtin(data_dir / "models")
    request = AddRequest(path=args.path, model_id=args.model_id, link=args.link)
    try:
        result = add(catalog.models_dir, request, catalog.builtin_card)
    except (ValueError, OSError) as error:
        print(f"skulk: add failed: {error}", file=sys.stderr)
        return 1
    entry = result.entry
    how = ("symbolic links to " + str(entry.linked_from) if entry.linked_from
           else "hard links" if result.linked else "a copy")
    print(f"added {entry.model_id} ({entry.format}, {size_text(entry.size_bytes)}, "
          f"{len(entry.files)} files, sha256 recorded) into {result.path} as {how}")
    print(f"a node running on {data_dir} announces it to the cluster; place it with: "
          f"skulk place {entry.model_id}")
    return 0
