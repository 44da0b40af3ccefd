from skulk.shared.applied_ahead import MAX_OFFERS, AppliedAhead
from skulk.shared.apply import apply
from skulk.shared.replica import StateReplica
from skulk.shared.types.events import IndexedEvent, InstanceCreated, StateSnapshotHydrated
from skulk.shared.types.ids import NodeId, SessionId
from skulk.shared.types.state import State
from skulk.testing import factories as f

SESSION, MASTER = SessionId("s1"), NodeId("m")


def indexed(index: int, event: InstanceCreated | StateSnapshotHydrated) -> IndexedEvent:
    return IndexedEvent(index=index, session=SESSION, master_node=MASTER, event=event)


def test_the_replica_adopts_the_state_offered_for_that_very_event() -> None:
    replica = StateReplica()
    replica.receive(indexed(0, StateSnapshotHydrated(state=State())))
    created = indexed(1, InstanceCreated(instance=f.instance()))
    after = apply(replica.state, created)
    replica.applied_ahead.offer(created, after)
    assert replica.receive(created) == [created]
    assert replica.state is after  # adopted, not applied again
    assert len(replica.applied_ahead) == 0


def test_an_equal_event_from_elsewhere_is_applied_not_adopted() -> None:
    replica = StateReplica()
    replica.receive(indexed(0, StateSnapshotHydrated(state=State())))
    created = indexed(1, InstanceCreated(instance=f.instance()))
    wrong = State()  # what a bad offer would install
    replica.applied_ahead.offer(created, wrong)
    copy = IndexedEvent.model_validate(created.model_dump())  # off the wire: equal, not it
    replica.receive(copy)
    assert replica.state is not wrong
    assert replica.state == apply(apply(State(), indexed(0, StateSnapshotHydrated(
        state=State()))), created)


def test_offers_not_taken_are_bounded() -> None:
    ahead = AppliedAhead()
    for index in range(MAX_OFFERS + 10):
        ahead.offer(indexed(index, StateSnapshotHydrated(state=State())), State())
    assert len(ahead) == MAX_OFFERS
