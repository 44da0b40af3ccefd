"""A pull's progress, written where the node on the same data dir can read it: one small
JSON record per pull beside its staging directory (`.partial/<name>.progress.json`),
rewritten at each report of the download (one per 10 MB chunk: cheap, and never behind
when a download stalls) and removed when the pull ends, whichever way. A record whose
pull was killed stays, with its last progress, until the pull is run again: the node
shows it as stopped."""

import time
from collections.abc import Callable
from pathlib import Path

from skulk.shared.types.ids import ModelId
from skulk.shared.types.telemetry import StorePull

PROGRESS_SUFFIX = ".progress.json"

Progress = Callable[[int, int], None]


def progress_path(partial_dir: Path, name: str) -> Path:
    return partial_dir / f"{name}{PROGRESS_SUFFIX}"


class ProgressRecord:
    """Wraps a pull's progress callback: passes every call on and keeps the record."""

    def __init__(self, path: Path, model_id: ModelId, repo: str, progress: Progress,
                 clock: Callable[[], float] = time.time) -> None:
        self._path, self._model_id, self._repo = path, model_id, repo
        self._progress, self._clock = progress, clock

    def __call__(self, done: int, total: int) -> None:
        self._progress(done, total)
        record = StorePull(model_id=self._model_id, repo=self._repo, done_bytes=done,
                           total_bytes=total, updated_at=self._clock())
        # Renamed into place, so a reader never sees half a record; not synced to disk: a
        # record lost to a power cut only hides a pull that is not running anyway.
        temporary = self._path.with_name(self._path.name + ".tmp")
        temporary.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(record.model_dump_json().encode())
        temporary.replace(self._path)

    def remove(self) -> None:
        self._path.unlink(missing_ok=True)


def pulls_under_way(partial_dir: Path) -> list[StorePull]:
    """Every pull record in the staging area (unreadable ones skipped), by model id."""
    if not partial_dir.is_dir():
        return []
    pulls = []
    for path in sorted(partial_dir.glob(f"*{PROGRESS_SUFFIX}")):
        try:
            pulls.append(StorePull.model_validate_json(path.read_bytes()))
        except (OSError, ValueError):
            continue
    return pulls
