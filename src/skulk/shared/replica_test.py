import math

import anyio
import anyio.lowlevel
import pytest

from skulk.shared.replica import StateReplica
from skulk.shared.types.events import (
    Event,
    IndexedBatch,
    IndexedEvent,
    InstanceCreated,
    StateSnapshotHydrated,
    TaskDeleted,
)
from skulk.shared.types.ids import InstanceId, NodeId, SessionId, TaskId
from skulk.shared.types.state import State
from skulk.testing import factories as f

S1, S2 = SessionId("s1"), SessionId("s2")
MASTER = NodeId("m")


def ev(index: int, event: Event, session: SessionId = S1,
       master: NodeId = MASTER) -> IndexedEvent:
    return IndexedEvent(master_node=master, index=index, session=session,
                        event=event)


def seed(session: SessionId = S1) -> IndexedEvent:
    return ev(0, StateSnapshotHydrated(state=State()), session)


def noop(index: int, session: SessionId = S1) -> IndexedEvent:
    return ev(index, TaskDeleted(task_id=TaskId("none")), session)


def test_events_are_released_in_index_order() -> None:
    replica = StateReplica()
    replica.receive(seed())
    assert replica.take_gap() is None
    assert replica.receive(noop(2)) == []
    assert replica.take_gap() == 1
    assert replica.take_gap() is None  # taken once
    applied = replica.receive(noop(1))
    assert [e.index for e in applied] == [1, 2]
    assert replica.state.last_event_applied_idx == 2


def test_duplicates_and_foreign_sessions_are_dropped() -> None:
    replica = StateReplica()
    replica.receive(seed())
    replica.receive(noop(1))
    assert replica.receive(noop(1)) == []
    assert replica.receive(noop(2, S2)) == []
    assert replica.state.last_event_applied_idx == 1


def test_a_waker_hears_each_application_before_any_subscriber_is_fed() -> None:
    replica = StateReplica()
    stream = replica.subscribe()
    woken: list[list[int]] = []  # at each wake, what the subscriber had been fed before

    def drained() -> list[int]:
        indexes = []
        while True:
            try:
                indexes.append(stream.receive_nowait().index)
            except anyio.WouldBlock:
                return indexes

    replica.wake_on_apply(lambda: woken.append(drained()))
    replica.receive(seed())
    replica.receive(noop(2))  # beyond a gap: nothing applied, nobody woken
    replica.receive(noop(1))  # applies 1 and 2 together: one wake
    replica.receive(noop(1))  # a duplicate: none
    assert woken == [[], [0]]  # never this application's own events
    assert drained() == [1, 2]


def test_a_subscriber_of_some_kinds_gets_only_those() -> None:
    replica = StateReplica()
    snapshots = replica.subscribe(kinds=(StateSnapshotHydrated,))
    with_before = replica.subscribe_with_before(kinds=(StateSnapshotHydrated,))
    every = replica.subscribe()
    replica.receive(seed())
    replica.receive(noop(1))
    replica.receive(ev(2, StateSnapshotHydrated(state=State())))
    assert [snapshots.receive_nowait().index for _ in range(2)] == [0, 2]
    assert [with_before.receive_nowait()[1].index for _ in range(2)] == [0, 2]
    with pytest.raises(anyio.WouldBlock):
        snapshots.receive_nowait()
    assert [every.receive_nowait().index for _ in range(3)] == [0, 1, 2]


def test_a_new_session_seed_switches_sessions() -> None:
    replica = StateReplica()
    replica.receive(seed())
    replica.receive(ev(1, InstanceCreated(instance=f.instance())))
    snapshot = State(instances={InstanceId("inst-9"): f.instance("inst-9")})
    replica.receive(ev(0, StateSnapshotHydrated(state=snapshot), S2))
    assert replica.session == S2
    assert list(replica.state.instances) == ["inst-9"]


def test_events_before_any_session_are_ignored() -> None:
    replica = StateReplica()
    assert replica.receive(noop(1)) == []
    assert replica.session is None


@pytest.mark.anyio
async def test_listeners_and_waiters_see_applied_events() -> None:
    replica = StateReplica()
    stream = replica.subscribe()
    result: list[State | None] = []

    async def waiter() -> None:
        result.append(await replica.wait_for(lambda s: bool(s.instances), timeout=2))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(waiter)
        await anyio.sleep(0.01)
        replica.receive(seed())
        replica.receive(ev(1, InstanceCreated(instance=f.instance())))
    assert result[0] is not None and "inst-1" in result[0].instances
    assert [stream.receive_nowait().index, stream.receive_nowait().index] == [0, 1]


@pytest.mark.anyio
async def test_wait_for_times_out_with_none() -> None:
    assert await StateReplica().wait_for(lambda s: False, timeout=0.05) is None


def test_events_from_a_master_not_elected_are_ignored() -> None:
    replica = StateReplica()
    replica.follow_master(NodeId("m"))
    assert replica.receive(ev(0, StateSnapshotHydrated(state=State()), S2,
                              master=NodeId("old"))) == []
    assert replica.session is None
    replica.receive(seed())
    assert replica.session == S1


def test_a_late_joiner_adopts_a_snapshot_at_any_index_then_continues() -> None:
    replica = StateReplica()
    assert replica.receive(noop(7)) == []
    snapshot = State(instances={InstanceId("inst-1"): f.instance()})
    assert [e.index for e in replica.receive(ev(8, StateSnapshotHydrated(state=snapshot)))] \
        == [8]
    assert [e.index for e in replica.receive(noop(9))] == [9]
    assert "inst-1" in replica.state.instances and replica.state.last_event_applied_idx == 9


def test_a_snapshot_past_a_gap_catches_up_and_an_old_one_is_a_duplicate() -> None:
    replica = StateReplica()
    replica.receive(seed())
    replica.receive(noop(1))
    assert replica.receive(ev(1, StateSnapshotHydrated(state=State()))) == []
    snapshot = State(instances={InstanceId("inst-1"): f.instance()})
    applied = replica.receive(ev(5, StateSnapshotHydrated(state=snapshot)))
    assert [e.index for e in applied] == [5] and "inst-1" in replica.state.instances


def test_applied_events_are_kept_for_reading_in_order() -> None:
    replica = StateReplica()
    replica.receive(seed())
    replica.receive(noop(2))
    assert [r.index for r in replica.recent.query()] == [0]  # 2 waits for 1
    replica.receive(noop(1))
    assert [(r.seq, r.index) for r in replica.recent.query()] == [(1, 0), (2, 1), (3, 2)]
    replica.receive(seed(S2))
    assert [r.session for r in replica.recent.query(after_seq=3)] == [S2]


def test_readers_with_before_get_the_state_each_event_was_applied_to() -> None:
    replica = StateReplica()
    paired = replica.subscribe_with_before()
    replica.receive(seed())
    after_seed = replica.state
    created = ev(1, InstanceCreated(instance=f.instance()))
    replica.receive(noop(2))  # early: held until 1 comes
    replica.receive(created)
    after_created = replica.state.model_copy(update={"last_event_applied_idx": 1})
    pairs = [paired.receive_nowait() for _ in range(3)]
    assert [indexed.index for _, indexed in pairs] == [0, 1, 2]
    assert pairs[0][0] == State()
    assert pairs[1][0] is after_seed and pairs[1][1] is created
    assert pairs[2][0].instances == after_created.instances
    assert pairs[2][0].last_event_applied_idx == 1


@pytest.mark.anyio
async def test_batches_are_applied_event_by_event_and_repeats_counted() -> None:
    from skulk.shared.types.events import IndexedBatch

    replica = StateReplica()
    send, batches = anyio.create_memory_object_stream[IndexedBatch](10)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(replica.run, batches)
        applied = replica.subscribe()
        await send.send(IndexedBatch(master_node=MASTER, events=[seed(), noop(1), noop(2)]))
        await send.send(IndexedBatch(master_node=MASTER, events=[noop(2), noop(3)]))
        with anyio.fail_after(5):
            assert [(await applied.receive()).index for _ in range(4)] == [0, 1, 2, 3]
        tasks.cancel_scope.cancel()
    assert replica.duplicates == 1


@pytest.mark.anyio
async def test_run_applies_at_most_16_events_a_step_however_the_batches_are_cut() -> None:
    """Batches already waiting are applied 16 events a step (the loop turns between), even
    when each is one event: `run` no longer turns after every batch."""
    replica = StateReplica()
    send, batches = anyio.create_memory_object_stream[IndexedBatch](math.inf)
    steps = 0
    applied_at_step: list[int] = []

    async def count_steps() -> None:
        nonlocal steps
        while True:
            applied_at_step.append(replica.next_index())
            steps += 1
            await anyio.lowlevel.checkpoint()

    def batch(*events: IndexedEvent) -> IndexedBatch:
        return IndexedBatch(master_node=MASTER, events=list(events))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(replica.run, batches)
        tasks.start_soon(count_steps)
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        send.send_nowait(batch(seed()))
        for index in range(1, 41):  # 40 batches of one, all waiting
            send.send_nowait(batch(noop(index)))
        with anyio.fail_after(2):
            while replica.next_index() < 41:
                await anyio.sleep(0)
        await anyio.lowlevel.checkpoint()
        tasks.cancel_scope.cancel()
    progress = sorted(set(applied_at_step))
    assert progress[-1] == 41
    gains = [later - earlier for earlier, later in zip(progress, progress[1:], strict=False)]
    assert gains and max(gains) <= 16, f"at most 16 events a step, got {gains}"
