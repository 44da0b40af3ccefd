"""A node's proposals travel as one batch of its own: a batch naming proposals of another
node, an empty one or one past the bound is refused when it is decoded."""

import msgpack
import pytest
from pydantic import ValidationError

from skulk.shared.types.events import (
    MAX_PROPOSALS_TOGETHER,
    LocalEvent,
    LocalEventBatch,
    TaskDeleted,
)
from skulk.shared.types.ids import NodeId, TaskId
from skulk.shared.types.wire import from_msgpack, to_msgpack

A = NodeId("a")


def proposal(seq: int, origin: NodeId = A) -> LocalEvent:
    return LocalEvent(origin=origin, epoch="e", origin_seq=seq,
                      event=TaskDeleted(task_id=TaskId(f"t{seq}")))


def test_a_node_s_proposals_round_trip_the_wire_in_their_order() -> None:
    batch = LocalEventBatch(origin=A, events=[proposal(3), proposal(1), proposal(2)])
    assert from_msgpack(LocalEventBatch, to_msgpack(batch)) == batch


@pytest.mark.parametrize("events", [
    [],  # empty
    [proposal(0), proposal(1, origin=NodeId("b"))],  # a proposal in another node's name
    [proposal(seq) for seq in range(MAX_PROPOSALS_TOGETHER + 1)],  # past the bound
])
def test_a_batch_that_is_not_one_node_s_bounded_proposals_is_refused(
        events: list[LocalEvent]) -> None:
    raw = {"origin": A, "events": [local.model_dump(mode="json") for local in events]}
    with pytest.raises(ValidationError):
        LocalEventBatch.model_validate(raw)
    with pytest.raises(ValueError):
        from_msgpack(LocalEventBatch, msgpack.packb(raw))
