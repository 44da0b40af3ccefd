"""Store directories: one lock per name, and publication in one rename."""

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def store_lock(models_dir: Path, name: str) -> Iterator[None]:
    """Hold an exclusive lock on one store name (blocks until it is free)."""
    models_dir.mkdir(parents=True, exist_ok=True)
    # The lock file stays: deleting it would let a waiter and a newcomer lock
    # different files under the same name.
    with open(models_dir / f".{name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sync_tree(directory: Path) -> None:
    """Flush every file under `directory` and the directories themselves, so a crash
    after a rename cannot leave a complete-looking directory with empty files."""
    for path in sorted(directory.rglob("*"), reverse=True):
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def publish_directory(staging: Path, target: Path, replace: bool) -> None:
    """Move a finished `staging` directory to `target` in one rename; an existing
    target is swapped out first when `replace`, else FileExistsError."""
    if target.exists():
        if not replace:
            raise FileExistsError(f"{target} already exists")
        retired = target.with_name(f".{target.name}.retired-{os.getpid()}")
        target.rename(retired)
        staging.rename(target)
        shutil.rmtree(retired)
    else:
        staging.rename(target)
