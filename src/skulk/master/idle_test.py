from skulk.master.idle import IdleTracker
from skulk.shared.types.events import (
    Event,
    InstanceCreated,
    InstanceDeleted,
    TaskCreated,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import InstanceId, TaskId
from skulk.shared.types.instances import Instance
from skulk.shared.types.state import State
from skulk.testing import factories as f


def feed(tracker: IdleTracker, timed: list[tuple[float, Event]]) -> State:
    state = State()
    for now, event in timed:
        state = f.state_with(event, start=state)
        tracker.note(event, state, now)
    return state


def ids(instances: list[Instance]) -> list[str]:
    return [i.instance_id for i in instances]


def test_an_instance_idle_past_its_keep_alive_expires_unless_pinned_or_busy() -> None:
    tracker = IdleTracker(default_keep_alive=60.0)
    pinned = f.instance("pinned", "run-p").model_copy(update={"pinned": True})
    state = feed(tracker, [(0.0, InstanceCreated(instance=f.instance("a", "run-a"))),
                           (0.0, InstanceCreated(instance=pinned)),
                           (0.0, InstanceCreated(instance=f.instance("b", "run-b"))),
                           (50.0, TaskCreated(task=f.task("t", "b", "c")))])
    assert tracker.expired(state, 59.0) == []
    assert ids(tracker.expired(state, 61.0)) == ["a"]  # b is busy, pinned stays
    state = _then(tracker, state, 100.0, TaskStatusUpdated(task_id=TaskId("t"),
                                                           status="complete"))
    assert ids(tracker.expired(state, 159.0)) == ["a"]  # b was used until 100
    assert ids(tracker.expired(state, 161.0)) == ["a", "b"]
    assert ids(tracker.least_recently_used(state, 161.0)) == ["a", "b"]


def _then(tracker: IdleTracker, state: State, now: float, event: Event) -> State:
    state = f.state_with(event, start=state)
    tracker.note(event, state, now)
    return state


def test_a_request_sets_its_instances_keep_alive_zero_removes_at_once_negative_never(
        ) -> None:
    tracker = IdleTracker(default_keep_alive=60.0)
    state = feed(tracker, [(0.0, InstanceCreated(instance=f.instance("a", "run-a"))),
                           (0.0, InstanceCreated(instance=f.instance("b", "run-b")))])
    for name, keep in (("a", 0.0), ("b", -1.0)):
        task = f.task(f"t-{name}", name, f"c-{name}")
        task = task.model_copy(update={"params": task.params.model_copy(
            update={"keep_alive_seconds": keep})})
        state = _then(tracker, state, 1.0, TaskCreated(task=task))
        state = _then(tracker, state, 2.0, TaskStatusUpdated(task_id=task.task_id,
                                                             status="complete"))
    assert ids(tracker.expired(state, 2.0)) == ["a"]
    assert ids(tracker.expired(state, 10**9)) == ["a"]  # b for ever
    state = _then(tracker, state, 3.0, InstanceDeleted(instance_id=InstanceId("a"),
                                                       reason="idle"))
    assert tracker.keep_alive(InstanceId("a")) == 60.0  # forgotten with it


def test_instances_carried_from_an_earlier_master_start_their_clock_now() -> None:
    tracker = IdleTracker(default_keep_alive=60.0)
    state = f.state_with(InstanceCreated(instance=f.instance("old", "run-o")))
    assert tracker.expired(state, 1000.0) == []  # first seen at 1000
    assert ids(tracker.expired(state, 1061.0)) == ["old"]
