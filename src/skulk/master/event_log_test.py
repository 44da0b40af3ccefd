import threading
import time
from pathlib import Path

import pytest
from loguru import logger

from skulk.master.event_log import LIVE_FILE, DiskEventLog
from skulk.master.event_log_archive import ARCHIVE_GLOB, read_archive
from skulk.shared.types.events import IndexedEvent, TaskDeleted
from skulk.shared.types.ids import NodeId, SessionId, TaskId


def event(index: int) -> IndexedEvent:
    return IndexedEvent(master_node=NodeId("m"), index=index, session=SessionId("s"),
                        event=TaskDeleted(task_id=TaskId(f"task-{index}")))


def fill(log: DiskEventLog, count: int) -> None:
    for index in range(log.next_index, log.next_index + count):
        log.append(event(index))


def critical_lines() -> tuple[list[str], int]:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="CRITICAL")
    return lines, sink


def test_append_and_read_by_index_range(tmp_path: Path) -> None:
    log = DiskEventLog(tmp_path)
    fill(log, 10)
    assert [e.index for e in log.read_range(3, 6)] == [3, 4, 5]
    assert log.read_range(0, 100) == [event(i) for i in range(10)]


def test_indices_must_be_contiguous(tmp_path: Path) -> None:
    log = DiskEventLog(tmp_path)
    with pytest.raises(ValueError, match="expects index 0"):
        log.append(event(1))


def test_reopen_archives_the_previous_run_compressed(tmp_path: Path) -> None:
    log = DiskEventLog(tmp_path)
    fill(log, 5)
    DiskEventLog(tmp_path)  # a restart without close, as after a crash
    [archived] = tmp_path.glob(ARCHIVE_GLOB)
    assert read_archive(archived) == [event(i) for i in range(5)]
    assert (tmp_path / LIVE_FILE).read_bytes() == b""


def test_close_archives_and_archive_names_are_unique(tmp_path: Path) -> None:
    for _ in range(3):
        log = DiskEventLog(tmp_path)
        fill(log, 2)
        log.close()
    assert len(list(tmp_path.glob(ARCHIVE_GLOB))) == 3


def test_archives_are_capped_by_count(tmp_path: Path) -> None:
    for _ in range(8):
        log = DiskEventLog(tmp_path, max_archives=5)
        fill(log, 2)
        log.close()
    assert len(list(tmp_path.glob(ARCHIVE_GLOB))) == 5


def test_archives_are_capped_by_bytes(tmp_path: Path) -> None:
    for _ in range(4):
        log = DiskEventLog(tmp_path, max_archive_bytes=1)
        fill(log, 50)
        log.close()
    assert list(tmp_path.glob(ARCHIVE_GLOB)) == []


def test_write_failure_degrades_loudly_once_and_keeps_counting(tmp_path: Path) -> None:
    writes = [0]

    def fail_after_three(_: bytes) -> None:
        writes[0] += 1
        if writes[0] > 3:
            raise OSError(28, "No space left on device")

    lines, sink = critical_lines()
    try:
        log = DiskEventLog(tmp_path, write_hook=fail_after_three)
        fill(log, 10)
    finally:
        logger.remove(sink)
    assert log.degraded and "No space left" in (log.degraded_reason or "")
    assert len(lines) == 1
    assert log.next_index == 10 and log.persisted_count == 3
    assert [e.index for e in log.read_range(0, 10)] == [0, 1, 2]


def test_low_free_space_degrades_before_the_disk_is_full(tmp_path: Path) -> None:
    free = [10 << 30]
    log = DiskEventLog(tmp_path, free_space_floor_bytes=1 << 30, free_space_check_every=4,
                       disk_free=lambda _: free[0])
    fill(log, 4)
    free[0] = 100
    fill(log, 6)
    assert log.degraded and log.persisted_count == 4 and log.next_index == 10


def test_a_truncated_last_record_is_ignored(tmp_path: Path) -> None:
    log = DiskEventLog(tmp_path)
    fill(log, 3)
    with (tmp_path / LIVE_FILE).open("ab") as live:
        live.write(b"\x00\x00\x01\x00partial")
    assert [e.index for e in log.read_range(0, 10)] == [0, 1, 2]


def test_an_unusable_directory_degrades_instead_of_crashing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    log = DiskEventLog(blocker / "log")
    fill(log, 2)
    assert log.degraded and log.next_index == 2


def test_a_new_session_archives_the_old_one_and_counts_from_zero(tmp_path: Path) -> None:
    log = DiskEventLog(tmp_path)
    fill(log, 3)
    log.start_session()
    assert log.next_index == 0
    fill(log, 2)
    assert [e.index for e in log.read_range(0, 10)] == [0, 1]
    log.wait_archived()  # archives are compressed off the caller's thread
    [archived] = tmp_path.glob(ARCHIVE_GLOB)
    assert [e.index for e in read_archive(archived)] == [0, 1, 2]


def test_compaction_keeps_a_snapshot_and_archives_the_tail(tmp_path: Path) -> None:
    from skulk.shared.types.events import StateSnapshotHydrated
    from skulk.shared.types.state import State

    log = DiskEventLog(tmp_path)
    fill(log, 5)
    snapshot = IndexedEvent(master_node=NodeId("m"), index=4, session=SessionId("s"),
                            event=StateSnapshotHydrated(state=State(last_event_applied_idx=4)))
    log.compact(snapshot)
    fill(log, 2)
    assert [e.index for e in log.read_range(0, 10)] == [4, 5, 6]
    assert isinstance(log.read_range(0, 10)[0].event, StateSnapshotHydrated)
    log.wait_archived()
    [archived] = tmp_path.glob(ARCHIVE_GLOB)
    assert [e.index for e in read_archive(archived)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="last event"):
        log.compact(snapshot)


def test_a_corrupt_middle_record_is_skipped_and_counted(tmp_path: Path) -> None:
    from skulk.master.event_log_records import decode_log, encode_record
    records = [encode_record(event(i)) for i in range(3)]
    damaged = records[1][:4] + b"\xc1" * (len(records[1]) - 4)
    decoded = decode_log(records[0] + damaged + records[2] + b"\x00\x00")
    assert [e.index for e in decoded.events] == [0, 2]
    assert decoded.corrupt == 1 and decoded.torn_bytes == 2


def test_half_written_archives_from_a_crash_are_removed(tmp_path: Path) -> None:
    (tmp_path / "events.20260101T000000-0.bin.tmp").write_bytes(b"half")
    (tmp_path / "events.rotated-1.bin").write_bytes(b"")
    log = DiskEventLog(tmp_path)
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob("events.rotated-*"))
    assert len(list(tmp_path.glob(ARCHIVE_GLOB))) == 1, "a rotated file is archived"
    log.close()


def test_a_record_that_would_go_under_the_floor_is_not_written(tmp_path: Path) -> None:
    from skulk.shared.types.events import StateSnapshotHydrated
    from skulk.shared.types.state import State
    log = DiskEventLog(tmp_path, free_space_floor_bytes=1000, free_space_check_every=1 << 20,
                       disk_free=lambda _: 1000 + (1 << 20))
    fill(log, 3)
    big = State(revoked_nodes=[NodeId(f"node-{i:06d}") for i in range(100_000)])
    log.append(IndexedEvent(master_node=NodeId("m"), index=3, session=SessionId("s"),
                            event=StateSnapshotHydrated(state=big)))
    assert log.degraded and log.persisted_count == 3


def test_the_live_file_counts_toward_the_byte_cap(tmp_path: Path) -> None:
    first = DiskEventLog(tmp_path)
    fill(first, 50)
    first.close()
    assert len(list(tmp_path.glob(ARCHIVE_GLOB))) == 1
    log = DiskEventLog(tmp_path, max_archive_bytes=2000)
    fill(log, 100)  # the live file alone passes the cap: older archives go
    assert list(tmp_path.glob(ARCHIVE_GLOB)) == []
    log.close()


def test_appends_never_wait_for_an_fsync(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The fsync runs on the log's own thread: an append while one hangs returns at once,
    and closing the log waits for it before the descriptor goes."""
    release, started, synced = threading.Event(), threading.Event(), []

    def slow_fsync(fd: int) -> None:
        started.set()
        assert release.wait(10)
        synced.append(fd)

    monkeypatch.setattr("skulk.master.event_log_sync.os.fsync", slow_fsync)
    log = DiskEventLog(tmp_path, sync_interval=0.0)
    log.append(event(0))
    assert started.wait(10)
    fill(log, 50)  # would block on the first had it been inline
    assert synced == [] and log.persisted_count == 51
    release.set()
    log.close()
    assert len(synced) >= 1 and not log.degraded


def test_a_failed_fsync_degrades_the_log(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_fsync(_fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("skulk.master.event_log_sync.os.fsync", failing_fsync)
    log = DiskEventLog(tmp_path, sync_interval=0.0)
    deadline = time.monotonic() + 10
    while not log.degraded and time.monotonic() < deadline:  # the next append reads it
        log.append(event(log.next_index))
        time.sleep(0.01)
    assert log.degraded_reason is not None and "syncing the event log" in log.degraded_reason
    log.close()
