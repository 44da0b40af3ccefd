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
    temporary = target.with_suffix(".tmp")
    with live.open("rb") as source, temporary.open("wb") as sink:
        compressor.copy_stream(source, sink)
    temporary.replace(target)
    live.unlink()
    return target


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


def read_archive(path: Path) -> list[IndexedEvent]:
    with path.open("rb") as source:
        data = zstandard.ZstdDecompressor().stream_reader(source).read()
    return decode_records(data)
