"""Archives of the master's event log: zstd-compressed, capped in count and bytes."""

import time
from pathlib import Path

import zstandard

from skulk.master.event_log_records import decode_records
from skulk.shared.types.events import IndexedEvent

ARCHIVE_GLOB = "events.*.bin.zst"


def archive(live: Path, directory: Path) -> Path:
    """Compress `live` into a new uniquely named archive and remove it."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    serial = 0
    while (target := directory / f"events.{stamp}-{serial}.bin.zst").exists():
        serial += 1
    compressor = zstandard.ZstdCompressor(level=3)
    temporary = target.with_suffix(".tmp")  # events.<stamp>.bin.tmp
    with live.open("rb") as source, temporary.open("wb") as sink:
        compressor.copy_stream(source, sink)
    temporary.replace(target)
    live.unlink()
    return target


def rotate(live: Path, directory: Path) -> Path:
    """Move the live file aside (instant); `compress_rotated` turns it into an archive."""
    target = directory / f"events.rotated-{time.time_ns()}.bin"
    live.replace(target)
    return target


def rotated_files(directory: Path) -> list[Path]:
    """Rotated files not yet archived (a stop or crash came first), oldest first."""
    return sorted(directory.glob("events.rotated-*.bin"))


def compress_rotated(rotated: Path, directory: Path) -> Path:
    return archive(rotated, directory)


def enforce_caps(directory: Path, max_archives: int, max_bytes: int) -> list[Path]:
    """Delete the oldest archives until both caps hold; returns what was deleted."""
    archives = sorted(directory.glob(ARCHIVE_GLOB), key=lambda p: (p.stat().st_mtime, p.name))
    deleted = []
    total = sum(p.stat().st_size for p in archives)
    while archives and (len(archives) > max_archives or total > max_bytes):
        oldest = archives.pop(0)
        total -= oldest.stat().st_size
        oldest.unlink()
        deleted.append(oldest)
    return deleted


def read_archive_bytes(path: Path) -> bytes:
    with path.open("rb") as source:
        data: bytes = zstandard.ZstdDecompressor().stream_reader(source).read()
    return data


def read_archive(path: Path) -> list[IndexedEvent]:
    return decode_records(read_archive_bytes(path))


def newest_archive(directory: Path) -> Path | None:
    archives = sorted(directory.glob(ARCHIVE_GLOB), key=lambda p: (p.stat().st_mtime, p.name))
    return archives[-1] if archives else None


def remove_leftovers(directory: Path) -> list[Path]:
    """Temporary archives a crash left half-written; the live file they came from was not
    removed, so nothing is lost by deleting them."""
    leftovers = list(directory.glob("events.*.bin.tmp"))
    for path in leftovers:
        path.unlink()
    return leftovers
