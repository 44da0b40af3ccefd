"""The log's fsync thread: a record is synced within the interval, the appender wakes the
thread only after a quiet spell, and a failed fsync is kept for the log to degrade."""

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from skulk.master import event_log_sync
from skulk.master.event_log_sync import LogSyncer


def until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return False


def synced_at_least(synced: list[int], count: int) -> bool:
    return len(synced) >= count


def test_records_are_synced_within_the_interval_and_polling_needs_no_wake(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    # Long enough that a test thread starved on a loaded machine still sees the polling
    # (a fresh clone's run, beside three MLX nodes, missed a 0.3 s spell).
    monkeypatch.setattr(event_log_sync, "LINGER_SECONDS", 1.0)

    def counted(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counted)
    with (tmp_path / "live").open("ab") as live:
        syncer = LogSyncer(interval=0.02)
        syncer.written(live.fileno())  # the first append wakes the thread
        assert until(lambda: len(synced) == 1 and syncer._polling)
        wakes = 0
        for count in range(2, 7):  # while it polls, an append only sets a flag
            wakes += not syncer._polling
            syncer.written(live.fileno())
            assert until(functools.partial(synced_at_least, synced, count), seconds=1.0)
        assert wakes == 0
        assert until(lambda: not syncer._polling), "a quiet spell ends the polling"
        quiet = len(synced)
        time.sleep(0.1)
        assert len(synced) == quiet, "nothing written, nothing synced"
        syncer.written(live.fileno())  # after the spell the append wakes it again
        assert until(lambda: len(synced) == quiet + 1)
        syncer.stop()


def test_a_failed_fsync_is_kept_and_nothing_is_synced_while_the_file_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(_fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with (tmp_path / "live").open("ab") as live:
        syncer = LogSyncer(interval=0.01)
        with syncer.replacing():
            syncer.written(live.fileno())
            time.sleep(0.05)
            assert syncer.error is None  # no fsync ran while the descriptor changed
        assert until(lambda: syncer.error is not None)  # the held-off one ran after
        syncer.stop()
