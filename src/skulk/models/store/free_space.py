"""Room on disk for a fetch, checked before the first byte."""

import shutil
import socket
from pathlib import Path

# Keep this much free beyond the weights: the log, the OS and other writers need room too.
HEADROOM_BYTES = 256 << 20


class NotEnoughSpace(OSError):
    """The store's disk cannot hold the weights; the message names model, bytes and node."""


def require_space(models_dir: Path, model_id: str, needed_bytes: int) -> None:
    models_dir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(models_dir).free
    if free < needed_bytes + HEADROOM_BYTES:
        raise NotEnoughSpace(
            f"not enough disk space for {model_id} on {socket.gethostname()}: it needs "
            f"{_gb(needed_bytes)} more (plus {_gb(HEADROOM_BYTES)} headroom) and "
            f"{models_dir} has {_gb(free)} free; free some space or use --data-dir")


def _gb(size: int) -> str:
    return f"{size / 1e9:.2f} GB"
