"""The master's disk event log: append-only records, archived on restart, never fatal.

Disk is treated as bounded: archives and the live file together are capped by bytes, and
archives by count; any write failure, or free space that the next record would take under
a floor, drops the log into a degraded counting-only mode with one loud line. Indices keep
advancing either way, so replay stays coherent.

Durability: every record is handed to the OS at once (a killed process loses nothing), and
the file is fsynced within `sync_interval` seconds of an append (group commit), on a thread
of its own (`event_log_sync.py`, which the loop does not wake while appends keep coming):
an fsync takes 1 to 25 ms on these machines' disks, which the master's event loop (the
node's, streaming tokens) must not wait for. A power cut loses at most the newest
`sync_interval` and one fsync of history, which the other members' replicas also hold.
Rotating the live file (a new session, a compaction) renames it, which is instant;
compressing it into an archive happens on a background thread, so the master indexes on
meanwhile. A replay reads only the records it asks for.
"""

import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import BinaryIO, Protocol

from loguru import logger

from skulk.master.event_log_archive import (
    ARCHIVE_GLOB,
    archive,
    compress_rotated,
    enforce_caps,
    remove_leftovers,
    rotate,
    rotated_files,
)
from skulk.master.event_log_records import decode_log, encode_record
from skulk.master.event_log_sync import LogSyncer
from skulk.shared.types.events import IndexedEvent

LIVE_FILE = "events.bin"
DEFAULT_SYNC_INTERVAL_SECONDS = 0.05
# A record at least this big (a snapshot) checks free space before it is written.
LARGE_RECORD_BYTES = 1 << 20


class EventLog(Protocol):
    """Where the master persists indexed events (`DiskEventLog`, or a test's list)."""

    def append(self, event: IndexedEvent) -> None: ...

    def compact(self, snapshot: IndexedEvent) -> None: ...

    def read_range(self, start: int, end: int) -> list[IndexedEvent]: ...


def _free_bytes(directory: Path) -> int:
    return shutil.disk_usage(directory).free


class DiskEventLog:
    """Opening rotates the previous run's live file into an archive and starts afresh."""

    def __init__(
        self,
        directory: Path,
        *,
        max_archives: int = 5,
        max_archive_bytes: int = 1 << 30,
        free_space_floor_bytes: int = 2 << 30,
        free_space_check_every: int = 1024,
        disk_free: Callable[[Path], int] = _free_bytes,
        write_hook: Callable[[bytes], None] | None = None,
        sync_interval: float | None = DEFAULT_SYNC_INTERVAL_SECONDS,
    ) -> None:
        self.directory = directory
        self._max_archives = max_archives
        self._max_bytes = max_archive_bytes
        self._floor = free_space_floor_bytes
        self._check_every = free_space_check_every
        self._disk_free = disk_free
        self._write_hook = write_hook
        self._syncer = None if sync_interval is None else LogSyncer(sync_interval)
        self.next_index = 0
        self.persisted_count = 0
        self.degraded_reason: str | None = None
        self._file: BinaryIO | None = None
        # Where each record of the live file starts (index, offset, length), for replays.
        self._offsets: list[tuple[int, int, int]] = []
        self._live_bytes = 0
        self._archiver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="event-log")
        self._archiving: Future[None] | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for leftover in remove_leftovers(directory):
                logger.warning("removed {}, a half-written archive left by a crash", leftover)
            for rotated in rotated_files(directory):
                compress_rotated(rotated, directory)
            live = directory / LIVE_FILE
            if live.exists():
                archive(live, directory)
            enforce_caps(directory, max_archives, max_archive_bytes)
            self._file = live.open("ab")
        except OSError as error:
            self._degrade(f"cannot open the event log in {directory}: {error}")

    @property
    def degraded(self) -> bool:
        return self.degraded_reason is not None

    def append(self, event: IndexedEvent) -> None:
        if event.index != self.next_index:
            raise ValueError(f"event log expects index {self.next_index}, got {event.index}; "
                             "the master must index events contiguously")
        self.next_index += 1
        if self.degraded or self._file is None:
            return
        record = encode_record(event)
        if not self._room_for(record):
            return
        try:
            if self._write_hook is not None:
                self._write_hook(record)
            self._file.write(record)
            self._file.flush()
            self._offsets.append((event.index, self._live_bytes, len(record)))
            self._live_bytes += len(record)
            self.persisted_count += 1
            if self._syncer is not None:
                if self._syncer.error is not None:  # the last fsync failed: records lost
                    self._degrade("syncing the event log to disk failed: "
                                  f"{self._syncer.error}")
                    return
                self._syncer.written(self._file.fileno())
        except OSError as error:
            self._degrade(f"writing the event log failed: {error}")
            return
        if self._live_bytes > self._max_bytes:
            # The live file alone is over the byte cap: keep what fits of the archives.
            enforce_caps(self.directory, self._max_archives, 0)

    def _room_for(self, record: bytes) -> bool:
        due = (self.next_index - 1) % self._check_every == 0
        if not due and len(record) < LARGE_RECORD_BYTES:
            return True
        free = self._disk_free(self.directory)
        if free - len(record) < self._floor:
            self._degrade(f"only {free} bytes free in {self.directory}: a {len(record)}-byte "
                          f"record would go under the {self._floor}-byte floor")
            return False
        return True

    @contextmanager
    def _descriptor_change(self) -> Iterator[None]:
        """No fsync runs while the live file is closed or replaced."""
        with self._syncer.replacing() if self._syncer is not None else nullcontext():
            yield

    def start_session(self) -> None:
        """A new master session indexes from 0: archive what the live file holds."""
        if self.next_index == 0:
            return
        self.next_index = 0
        self._restart_live_file(first_record=None, failure="could not start a new log file")

    def compact(self, snapshot: IndexedEvent) -> None:
        """Archive the live file and start it again from `snapshot`, the state after the
        last appended event; a replay from before it is then answered with the snapshot."""
        if snapshot.index != self.next_index - 1:
            raise ValueError(f"a snapshot must be of the last event ({self.next_index - 1}), "
                             f"not {snapshot.index}")
        self._restart_live_file(first_record=snapshot, failure="compacting the log failed")

    def _restart_live_file(self, first_record: IndexedEvent | None, failure: str) -> None:
        with self._descriptor_change():  # an fsync holds the file's descriptor
            self._restart_live_file_now(first_record, failure)

    def _restart_live_file_now(self, first_record: IndexedEvent | None, failure: str) -> None:
        if self._file is None or self.degraded:
            return
        self._file.close()
        self._offsets, self._live_bytes = [], 0
        try:
            rotated = rotate(self.directory / LIVE_FILE, self.directory)
            self._compress_in_background(rotated)
            self._file = (self.directory / LIVE_FILE).open("ab")
            if first_record is not None:
                record = encode_record(first_record)
                self._file.write(record)
                self._file.flush()
                self._offsets.append((first_record.index, 0, len(record)))
                self._live_bytes = len(record)
        except OSError as error:
            self._file = None
            self._degrade(f"{failure}: {error}")

    def _compress_in_background(self, rotated: Path) -> None:
        previous = self._archiving

        def compress() -> None:
            if previous is not None:
                previous.result()  # archives are made in order
            try:
                compress_rotated(rotated, self.directory)
                enforce_caps(self.directory, self._max_archives,
                             max(0, self._max_bytes - self._live_bytes))
            except OSError as error:
                logger.error("could not archive {}: {}", rotated.name, error)

        self._archiving = self._archiver.submit(compress)

    def wait_archived(self) -> None:
        """Until every rotated file is an archive (for tests and shutdown)."""
        if self._archiving is not None:
            self._archiving.result()

    def read_range(self, start: int, end: int) -> list[IndexedEvent]:
        """Persisted events with `start <= index < end`, reading only their records."""
        wanted = [(offset, length) for index, offset, length in self._offsets
                  if start <= index < end]
        if not wanted:
            return []
        first, last = wanted[0][0], wanted[-1][0] + wanted[-1][1]
        try:
            with (self.directory / LIVE_FILE).open("rb") as live:
                live.seek(first)
                data = live.read(last - first)
        except OSError:
            return []
        return [e for e in decode_log(data).events if start <= e.index < end]

    def close(self) -> None:
        """Close and archive the live file."""
        self.wait_archived()  # one archiver at a time: names are chosen by what exists
        if self._syncer is not None:
            self._syncer.stop()  # after an fsync running now: it holds the descriptor
        if self._file is not None:
            self._file.close()
            self._file = None
            try:
                archive(self.directory / LIVE_FILE, self.directory)
            except OSError as error:
                logger.error("could not archive the event log on close: {}", error)
        self._archiver.shutdown(wait=True)
        try:
            enforce_caps(self.directory, self._max_archives, self._max_bytes)
        except OSError as error:
            logger.error("could not cap the event log's archives: {}", error)

    def archives(self) -> list[Path]:
        return sorted(self.directory.glob(ARCHIVE_GLOB))

    def _degrade(self, reason: str) -> None:
        if self.degraded:
            return
        self.degraded_reason = reason
        logger.critical("event log degraded to counting only, events are no longer "
                        "persisted: {}. Free disk space and restart the node.", reason)
        with self._descriptor_change():  # its descriptor must not be closed under an fsync
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
