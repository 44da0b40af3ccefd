"""`skulk models import PATH`: a GGUF file or Hugging Face directory → MLX, offline."""

import argparse
import sys
import time
from pathlib import Path

from skulk.models.catalog import ModelCatalog
from skulk.paths import default_data_dir
from skulk.shared.types.model_cards import ModelCard

Q_BITS_HELP = (
    "store weight matrices as MLX 4- or 8-bit affine (group 32, float32 scales) instead "
    "of float32. Q4_0/Q4_1/Q8_0 GGUF blocks are repacked losslessly (a wider block keeps "
    "its own width, so a Q8_0 embedding stays 8-bit); float weights and other GGUF types "
    "are quantized with mx.quantize, which rounds and may drift from the float model, "
    "4-bit most. Default: float32, the fastest on a CPU with OpenBLAS")


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path,
                        help="a .gguf file, or a directory with config.json, *.safetensors "
                             "and tokenizer files")
    parser.add_argument("--model-id", default=None,
                        help="the model it is (default: the card whose GGUF or alias matches "
                             "PATH, else PATH's name)")
    parser.add_argument("--q-bits", type=int, choices=[4, 8], default=None, help=Q_BITS_HELP)
    parser.add_argument("--replace", action="store_true",
                        help="import again even when the store already has this model")
    parser.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS,
                        help="node data dir (models go to DATA_DIR/models)")


def identify(catalog: ModelCatalog, source: Path, model_id: str | None
             ) -> tuple[ModelCard | None, str]:
    """The card and model id an import is for: `model_id` (resolved through the catalog
    when it names a card), else the card whose GGUF filename or alias matches `source`,
    else `source`'s name in lower case."""
    if model_id is not None:
        card = catalog.resolve(model_id)
        return card, card.model_id if card is not None else model_id
    for card in catalog.cards():
        gguf = card.source_for("gguf")
        if gguf is not None and gguf.filename == source.name:
            return card, card.model_id
    card = catalog.resolve(source.stem) or catalog.resolve(source.name)
    if card is not None:
        return card, card.model_id
    return None, source.stem.lower()


def run_import(args: argparse.Namespace) -> int:
    """Carry out `skulk models import`; errors go to stderr with exit status 1."""
    # Imported here so that other subcommands do not pay for loading mlx and gguf.
    from skulk.models.mlx_import.store import import_to_store, source_format, store_name

    data_dir: Path = getattr(args, "data_dir", None) or default_data_dir()
    catalog = ModelCatalog.builtin(data_dir / "models")
    source: Path = args.path.expanduser()
    started = time.monotonic()
    try:
        kind = source_format(source)
        card, model_id = identify(catalog, source, args.model_id)
        name = store_name(card, model_id, args.q_bits)
        result = import_to_store(source, catalog.models_dir, name, model_id, args.q_bits,
                                 replace=args.replace)
    except (ValueError, OSError) as error:
        print(f"skulk: import failed: {error}", file=sys.stderr)
        return 1
    if not result.imported:
        print(f"{model_id} is already imported at {result.path} (--replace imports it again)")
        return 0
    width = f"{args.q_bits}-bit" if args.q_bits else "float32"
    print(f"imported {model_id} ({kind} → MLX {width}) into {result.path} "
          f"in {time.monotonic() - started:.1f} s")
    if card is None:
        print(f"note: no model card names {model_id}; add one with an mlx source "
              f"filename = \"{name}\" to serve it")
    return 0
