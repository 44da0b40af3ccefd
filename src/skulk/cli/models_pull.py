"""`skulk models pull NAME`: weights from the hub into this node's store, with progress.
NAME is a catalogue id or alias (`qwen2.5-0.5b-instruct`: the card's repository for the
chosen format and quantization, stored under the card's id) or a hub repository."""

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from skulk.cli.units import size_text
from skulk.paths import default_data_dir


def add_pull_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repo", metavar="NAME",
                        help="a catalogue id or alias (see `skulk models list`), e.g. "
                             "qwen2.5-0.5b-instruct, or a Hugging Face repository, e.g. "
                             "Qwen/Qwen2.5-0.5B-Instruct-GGUF")
    parser.add_argument("--model-id", default=None,
                        help="the id to serve it under (default: the catalogue id, or "
                             "from the repository name)")
    parser.add_argument("--quant", default=None,
                        help="which GGUF quantization, e.g. Q4_K_M (default: Q4_K_M when "
                             "offered, else the only one)")
    parser.add_argument("--format", choices=["gguf", "mlx"], default=None,
                        help="which weights when the repository has both (default: gguf)")
    parser.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS,
                        help="node data dir (models go to DATA_DIR/models)")


class ProgressLine:
    """One terminal line: bytes, percent, rate and time left, redrawn at most 5 times a
    second (and always at the end)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._started = time.monotonic()
        self._drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._drawn < 0.2:
            return
        self._drawn = now
        self._out.write("\r" + progress_text(done, total, now - self._started))
        self._out.flush()


def progress_text(done: int, total: int, elapsed: float) -> str:
    rate = done / elapsed if elapsed > 0 else 0.0
    left = (total - done) / rate if rate > 0 else None
    eta = f"{left:4.0f} s left" if left is not None and done < total else "        "
    percent = 100 * done / total if total else 100.0
    return (f"{size_text(done):>10} / {size_text(total)}  {percent:5.1f}%  "
            f"{size_text(rate):>10}/s  {eta}")


def run_pull(args: argparse.Namespace) -> int:
    """Carry out `skulk models pull`; errors go to stderr with exit status 1."""
    from skulk.models.catalog import ModelCatalog
    from skulk.models.store.catalogue_pull import pull_request_for
    from skulk.models.store.pull import pull

    data_dir: Path = getattr(args, "data_dir", None) or default_data_dir()
    models_dir = data_dir / "models"
    try:
        card = ModelCatalog.builtin(models_dir).resolve(args.repo)
        request = pull_request_for(args.repo, card, model_id=args.model_id,
                                   format=args.format, quant=args.quant)
        if card is not None and request.repo != args.repo:
            quant = f" {request.quant}" if request.quant else ""
            print(f"{card.model_id}: {request.format}{quant} from {request.repo}",
                  file=sys.stderr)
        result = pull(models_dir, request, ProgressLine(sys.stderr))
    except (ValueError, OSError, RuntimeError) as error:
        print(f"\nskulk: pull failed: {error}", file=sys.stderr)
        return 1
    entry = result.entry
    verb = "pulled" if result.fetched else "already in the store:"
    print(f"\n{verb} {entry.model_id} ({entry.format}, {size_text(entry.size_bytes)}, "
          f"{len(entry.files)} files, sha256-verified) into {result.path}")
    print(f"serve it: skulk run --serve {entry.model_id}   (or place it on a running "
          f"cluster: skulk place {entry.model_id})")
    return 0
