import json

import pytest

from skulk.shared import recent_events
from skulk.shared.recent_events import DETAIL_CHARS, EventRecord, RecentEvents, render
from skulk.shared.types.event_source import EventSource
from skulk.shared.types.events import (
    Event,
    IndexedEvent,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
    TaskCreated,
    TaskDeleted,
)
from skulk.shared.types.ids import NodeId, RunnerId, SessionId, TaskId
from skulk.shared.types.runners import RunnerFailed
from skulk.testing import factories as f


def ev(index: int, event: Event, source: EventSource | None = None) -> IndexedEvent:
    return IndexedEvent(index=index, session=SessionId("s1"), master_node=NodeId("m"),
                        event=event, source=source)


def test_a_record_names_the_ids_and_the_status_of_its_event() -> None:
    source = EventSource(origin=NodeId("w1"), epoch="e", origin_seq=3)
    failed = ev(4, RunnerStatusUpdated(runner_id=RunnerId("run-1"),
                                       status=RunnerFailed(error="out of memory")), source)
    record = render(failed, seq=9, applied_at=12.5)
    assert (record.seq, record.index, record.kind, record.origin) == (
        9, 4, "RunnerStatusUpdated", "w1")
    assert record.summary == "runner_id=run-1 status=failed error=out of memory"
    assert json.loads(record.detail) == {
        "runner_id": "run-1", "status": {"kind": "failed", "error": "out of memory"}}


def test_a_snapshot_is_recorded_as_counts_not_as_the_state() -> None:
    state = f.state_with(*f.one_of_each_event()[:1])
    record = render(ev(0, StateSnapshotHydrated(state=state)), seq=1, applied_at=0.0)
    assert record.kind == "StateSnapshotHydrated"
    assert json.loads(record.detail)["instances"] == len(state.instances)
    assert "instances=" in record.summary


def test_a_long_prompt_is_cut_to_the_detail_limit() -> None:
    long_task = f.task().model_copy(update={"params": f.params("x" * 10 * DETAIL_CHARS)})
    created = ev(1, TaskCreated(task=long_task))
    record = render(created, seq=1, applied_at=0.0)
    assert len(record.detail) == DETAIL_CHARS and record.detail.endswith("…")
    assert "task_id=" in record.summary


def test_the_ring_keeps_the_newest_and_pages_by_sequence() -> None:
    recent = RecentEvents(capacity=3, clock=lambda: 1.0)
    assert recent.last_seq == 0 and recent.query() == []
    for index in range(5):
        recent.record(ev(index, TaskDeleted(task_id=TaskId(f"t{index}"))))
    assert recent.last_seq == 5
    assert [r.seq for r in recent.query()] == [3, 4, 5]
    assert [r.seq for r in recent.query(after_seq=4)] == [5]
    assert [r.seq for r in recent.query(limit=2)] == [4, 5]
    assert recent.query(limit=0) == []


def test_the_ring_filters_by_kind() -> None:
    recent = RecentEvents()
    recent.record(ev(0, StateSnapshotHydrated(state=f.state_with())))
    recent.record(ev(1, TaskDeleted(task_id=TaskId("t"))))
    assert [r.kind for r in recent.query(kinds={"TaskDeleted"})] == ["TaskDeleted"]
    assert len(recent.query(kinds=set())) == 2


def test_an_event_is_rendered_when_first_read_with_its_arrival_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[int] = []

    def counting(indexed: IndexedEvent, seq: int, applied_at: float) -> EventRecord:
        rendered.append(seq)
        return render(indexed, seq, applied_at)

    monkeypatch.setattr(recent_events, "render", counting)
    now = [5.0]
    recent = RecentEvents(clock=lambda: now[0])
    deleted = ev(0, TaskDeleted(task_id=TaskId("t")))
    recent.record(deleted)
    recent.record(ev(1, TaskCreated(task=f.task())))  # holds a prompt: rendered at once
    assert rendered == [2]
    now[0] = 9.0
    [record] = recent.query(kinds={"TaskDeleted"})
    assert record == render(deleted, seq=1, applied_at=5.0)
    recent.query()
    assert rendered == [2, 1]  # each at most once
