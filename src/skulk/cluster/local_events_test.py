import pytest

from skulk.cluster.local_events import GIVE_UP_SECONDS, LocalEventSender
from skulk.shared.types.events import EventSource, IndexedEvent, LocalEvent, TaskDeleted
from skulk.shared.types.ids import NodeId, TaskId


@pytest.mark.anyio
async def test_events_are_resent_with_backoff_until_indexed_then_given_up() -> None:
    now = [0.0]
    sent: list[LocalEvent] = []

    async def publish(local: LocalEvent) -> None:
        sent.append(local)

    sender = LocalEventSender(node_id=NodeId("a"), epoch="e", publish=publish,
                              clock=lambda: now[0])
    await sender.send(TaskDeleted(task_id=TaskId("t1")))
    await sender.send(TaskDeleted(task_id=TaskId("t2")))
    assert [s.origin_seq for s in sent] == [0, 1]
    sender.indexed(IndexedEvent(index=4, session="s", master_node="m",  # type: ignore[arg-type]
                                event=sent[0].event,
                                source=EventSource(origin=NodeId("a"), epoch="e", origin_seq=0)))
    now[0] = 1.0
    await sender.resend_due()
    assert [s.origin_seq for s in sent] == [0, 1, 1]
    now[0] = 2.0
    await sender.resend_due()  # backed off: the next resend is 2 s later
    assert len(sent) == 3
    now[0] = 3.0
    await sender.resend_due()
    assert len(sent) == 4
    now[0] = GIVE_UP_SECONDS + 1
    await sender.resend_due()
    assert sender.pending == 0
