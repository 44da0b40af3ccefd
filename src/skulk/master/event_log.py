"""The master's disk event log: append-only records, archived on restart, never fatal.

Disk is treated as bounded: archives are capped by count and bytes, and any write failure,
or free space under a floor, drops the log into a degraded counting-only mode with one
loud line. Indices keep advancing either way, so replay stays coherent.
"""

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from loguru import logger

from skulk.master.event_log_archive import archive, enforce_caps
from skulk.master.event_log_records import decode_records, encode_record
from skulk.shared.types.events import IndexedEvent

LIVE_FILE = "events.bin"


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
    ) -> None:
        self.directory = directory
        self._max_archives = max_archives
        self._max_archive_bytes = max_archive_bytes
        self._floor = free_space_floor_bytes
        self._check_every = free_space_check_every
        self._disk_free = disk_free
        self._write_hook = write_hook
        self.next_index = 0
        self.persisted_count = 0
        self.degraded_reason: str | None = None
        self._file: BinaryIO | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
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
        if (self.next_index - 1) % self._check_every == 0:
            free = self._disk_free(self.directory)
            if free < self._floor:
                self._degrade(f"only {free} bytes free in {self.directory}, under the "
                              f"{self._floor}-byte floor")
                return
        record = encode_record(event)
        try:
            if self._write_hook is not None:
                self._write_hook(record)
            self._file.write(record)
            # Flushed to the OS, not fsynced: a node crash keeps what the kernel has, and
            # the replicas hold the same events, so durability per record is not worth a
            # disk sync per token-sized event.
            self._file.flush()
            self.persisted_count += 1
        except OSError as error:
            self._degrade(f"writing the event log failed: {error}")

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
        if self._file is None or self.degraded:
            return
        self._file.close()
        try:
            archive(self.directory / LIVE_FILE, self.directory)
            enforce_caps(self.directory, self._max_archives, self._max_archive_bytes)
            self._file = (self.directory / LIVE_FILE).open("ab")
            if first_record is not None:
                self._file.write(encode_record(first_record))
                self._file.flush()
        except OSError as error:
            self._file = None
            self._degrade(f"{failure}: {error}")

    def read_range(self, start: int, end: int) -> list[IndexedEvent]:
        """Persisted events with `start <= index < end`."""
        live = self.directory / LIVE_FILE
        if not live.exists():
            return []
        return [e for e in decode_records(live.read_bytes()) if start <= e.index < end]

    def close(self) -> None:
        """Close and archive the live file."""
        if self._file is None:
            return
        self._file.close()
        self._file = None
        try:
            archive(self.directory / LIVE_FILE, self.directory)
            enforce_caps(self.directory, self._max_archives, self._max_archive_bytes)
        except OSError as error:
            logger.error("could not archive the event log on close: {}", error)

    def _degrade(self, reason: str) -> None:
        if self.degraded:
            return
        self.degraded_reason = reason
        logger.critical("event log degraded to counting only, events are no longer "
                        "persisted: {}. Free disk space and restart the node.", reason)
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
