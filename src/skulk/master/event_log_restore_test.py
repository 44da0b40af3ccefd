from pathlib import Path

from skulk.master.event_log import LIVE_FILE, DiskEventLog
from skulk.master.event_log_records import encode_record
from skulk.master.event_log_restore import replay, restore_from_log
from skulk.shared.types.events import (
    Event,
    IndexedEvent,
    InstanceCreated,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
    TaskCreated,
)
from skulk.shared.types.ids import NodeId, RunnerId, SessionId
from skulk.shared.types.runners import RunnerReady
from skulk.shared.types.state import State
from skulk.testing import factories as f


def indexed(index: int, event: Event, session: str = "s") -> IndexedEvent:
    return IndexedEvent(index=index, session=SessionId(session), master_node=f.NODE,
                        event=event)


HISTORY = [indexed(0, StateSnapshotHydrated(state=State())),
           indexed(1, InstanceCreated(instance=f.instance())),
           indexed(2, RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerReady())),
           indexed(3, TaskCreated(task=f.task()))]


def test_replay_gives_the_session_state_and_skips_what_does_not_follow() -> None:
    replayed = replay([*HISTORY, indexed(7, TaskCreated(task=f.task("task-9")))])
    assert replayed is not None
    state, skipped = replayed
    assert list(state.instances) == ["inst-1"] and state.last_event_applied_idx == 3
    assert skipped == 1
    assert replay([]) is None


def test_a_killed_node_gets_its_instances_back_without_its_dead_runners_and_tasks(
        tmp_path: Path) -> None:
    log = DiskEventLog(tmp_path)
    for event in HISTORY:
        log.append(event)
    # Killed: no close. A torn record at the end, as a crash mid-write leaves.
    with (tmp_path / LIVE_FILE).open("ab") as live:
        live.write(encode_record(indexed(4, TaskCreated(task=f.task("t2"))))[:9])
    reopened = DiskEventLog(tmp_path)
    restored = restore_from_log(reopened.directory, f.NODE)
    assert restored is not None
    assert list(restored.state.instances) == ["inst-1"]
    assert restored.state.runners == {} and restored.state.tasks == {}
    assert restored.session == "s" and restored.master_node == f.NODE
    assert restore_from_log(tmp_path, NodeId("elsewhere")) is not None
    reopened.close()


def test_a_corrupt_record_in_the_middle_costs_that_record_only(tmp_path: Path) -> None:
    records = [encode_record(event) for event in HISTORY]
    records[2] = records[2][:4] + b"\xc1" * (len(records[2]) - 4)
    (tmp_path / LIVE_FILE).write_bytes(b"".join(records))
    log = DiskEventLog(tmp_path)
    restored = restore_from_log(tmp_path, f.NODE)
    assert restored is not None and restored.corrupt == 2  # the record, and the task after
    assert list(restored.state.instances) == ["inst-1"]
    log.close()


def test_nothing_to_restore_on_a_fresh_node(tmp_path: Path) -> None:
    log = DiskEventLog(tmp_path)
    assert restore_from_log(tmp_path, f.NODE) is None
    log.close()


def test_a_log_of_a_session_the_node_no_longer_followed_is_not_restored(
        tmp_path: Path) -> None:
    from skulk.master.event_log_restore import note_followed_session
    log = DiskEventLog(tmp_path)
    for event in HISTORY:
        log.append(event)
    note_followed_session(tmp_path, SessionId("s"))
    log.close()
    assert restore_from_log(tmp_path, f.NODE) is not None
    note_followed_session(tmp_path, SessionId("another-masters-session"))
    assert restore_from_log(tmp_path, f.NODE) is None
