"""A batch of indexed events is one master's consecutive run of one session: anything else
is refused when it is decoded, before a replica sees it."""

import msgpack
import pytest
from pydantic import ValidationError

from skulk.shared.types.events import IndexedBatch, IndexedEvent, TaskDeleted
from skulk.shared.types.ids import NodeId, SessionId, TaskId
from skulk.shared.types.wire import from_msgpack, to_msgpack

M = NodeId("m")


def indexed(index: int, session: str = "s", master: NodeId = M) -> IndexedEvent:
    return IndexedEvent(index=index, session=SessionId(session), master_node=master,
                        event=TaskDeleted(task_id=TaskId("t")))


def test_a_consecutive_run_round_trips_the_wire() -> None:
    batch = IndexedBatch(master_node=M, events=[indexed(4), indexed(5), indexed(6)])
    assert from_msgpack(IndexedBatch, to_msgpack(batch)) == batch


@pytest.mark.parametrize("events", [
    [],  # empty
    [indexed(4), indexed(6)],  # a hole
    [indexed(5), indexed(4)],  # out of order
    [indexed(4), indexed(5, session="other")],  # two sessions
    [indexed(4), indexed(5, master=NodeId("x"))],  # an event of another master
])
def test_anything_but_one_masters_consecutive_run_is_refused(
        events: list[IndexedEvent]) -> None:
    with pytest.raises(ValidationError):
        IndexedBatch(master_node=M, events=events)
    document = {"master_node": M, "events": [e.model_dump(mode="json") for e in events]}
    with pytest.raises(ValueError):
        from_msgpack(IndexedBatch, msgpack.packb(document))
