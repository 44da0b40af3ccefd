import anyio
import pytest

from skulk.api.data_plane import ChunkSender, DataPlaneReceiver
from skulk.api.streams import CommandStream, StreamRegistry
from skulk.api.tracing import TraceStore
from skulk.routing.dropped import DroppedMessages
from skulk.routing.router import Received
from skulk.shared.replica import StateReplica
from skulk.shared.types.chunks import DataChunk, TokenChunk
from skulk.shared.types.events import InstanceCreated, InstanceDeleted, TaskCreated
from skulk.shared.types.ids import CommandId, InstanceId, NodeId, SessionId
from skulk.shared.types.state import State
from skulk.testing.channels import Collected
from skulk.testing.factories import NODE, instance, state_with, task

COMMAND = CommandId("cmd-1")
STRANGER = NodeId("node-x")


def chunk(sequence: int, text: str) -> DataChunk:
    return DataChunk(command_id=COMMAND, owner_node=NODE, sequence=sequence,
                     chunk=TokenChunk(text=text))


def served() -> State:
    """`cmd-1` is served by `inst-1`, whose one rank is on NODE."""
    return state_with(InstanceCreated(instance=instance()), TaskCreated(task=task()))


def receiver() -> tuple[DataPlaneReceiver, StreamRegistry, DroppedMessages]:
    streams, dropped = StreamRegistry(), DroppedMessages()
    return DataPlaneReceiver(streams=streams, traces=TraceStore(), dropped=dropped), \
        streams, dropped


async def text(stream: CommandStream, length: int) -> str:
    """The stream's text once `length` characters came (chunks waiting together are read
    as one, so the text, not the chunk count, is what a test can expect)."""
    received = ""
    with anyio.fail_after(1):
        while len(received) < length:
            received += getattr(await stream.next_chunk(), "text", "")
    return received


@pytest.mark.anyio
async def test_a_rank_of_the_serving_instance_writes_into_the_request() -> None:
    plane, streams, dropped = receiver()
    stream = streams.open(COMMAND)
    plane.take_chunk(Received(NODE, chunk(0, "a")), served())
    plane.take_chunk(Received(NODE, chunk(1, "b")), served())
    assert await text(stream, 2) == "ab"
    assert dropped.total() == 0


@pytest.mark.anyio
async def test_a_node_holding_no_rank_cannot_write_into_the_request() -> None:
    plane, streams, dropped = receiver()
    stream = streams.open(COMMAND)
    plane.take_chunk(Received(NODE, chunk(0, "a")), served())
    plane.take_chunk(Received(STRANGER, chunk(1, "forged")), served())
    plane.take_chunk(Received(NODE, chunk(1, "b")), served())
    assert await text(stream, 2) == "ab"
    assert dropped.counts["data", "not_a_rank_of_the_request"] == 1


@pytest.mark.anyio
async def test_a_stranger_is_refused_on_the_first_chunk_too() -> None:
    plane, streams, dropped = receiver()
    streams.open(COMMAND)
    plane.take_chunk(Received(STRANGER, chunk(0, "forged")), served())
    assert dropped.counts["data", "not_a_rank_of_the_request"] == 1


@pytest.mark.anyio
async def test_a_chunk_that_outruns_its_task_waits_for_it() -> None:
    plane, streams, dropped = receiver()
    stream = streams.open(COMMAND)
    plane.take_chunk(Received(NODE, chunk(0, "early")), State())
    plane.state_changed(served())
    assert await text(stream, 5) == "early"
    assert dropped.total() == 0


@pytest.mark.anyio
async def test_each_waiting_request_is_released_once_its_own_task_is_known() -> None:
    """Of several requests whose chunks outran their tasks, a state change releases those
    it made known, in order, and the rest keep waiting (their chunks untouched)."""
    plane, streams, dropped = receiver()
    commands = [CommandId(f"cmd-{index}") for index in range(3)]
    opened = [streams.open(command) for command in commands]
    for command in commands:
        for sequence, word in enumerate(["x", "y"]):
            plane.take_chunk(Received(NODE, chunk(sequence, word).model_copy(
                update={"command_id": command})), State())
    first_known = state_with(InstanceCreated(instance=instance()), TaskCreated(
        task=task("task-0", command_id="cmd-0")))
    plane.state_changed(first_known)
    assert await text(opened[0], 2) == "xy"
    plane.state_changed(first_known)  # nothing new: the others still wait
    streams.close(commands[2])  # its client left: its chunks go at the next change
    plane.state_changed(state_with(TaskCreated(task=task("task-1", command_id="cmd-1")),
                                   start=first_known))
    assert await text(opened[1], 2) == "xy"
    assert plane._waiting == {} and dropped.total() == 0


@pytest.mark.anyio
async def test_the_ranks_are_kept_per_request_once_known() -> None:
    """A request's instance does not change, so its ranks are looked up once: the last
    tokens still arrive after the instance left the state, and a stranger is still
    refused."""
    plane, streams, dropped = receiver()
    stream = streams.open(COMMAND)
    plane.take_chunk(Received(NODE, chunk(0, "a")), served())
    gone = state_with(InstanceDeleted(instance_id=InstanceId("inst-1"), reason="test"),
                      start=served())
    plane.take_chunk(Received(NODE, chunk(1, "b")), gone)
    plane.take_chunk(Received(STRANGER, chunk(2, "forged")), gone)
    assert await text(stream, 2) == "ab"
    assert dropped.counts["data", "not_a_rank_of_the_request"] == 1


@pytest.mark.anyio
async def test_chunks_of_a_request_not_open_here_are_ignored() -> None:
    plane, _, dropped = receiver()
    plane.take_chunk(Received(NODE, chunk(0, "a")), served())
    assert dropped.total() == 0


@pytest.mark.anyio
async def test_the_chunk_sender_keeps_a_request_taken_here_off_the_data_plane() -> None:
    plane, streams, _ = receiver()
    stream = streams.open(COMMAND)
    replica = StateReplica()
    replica.restore(served(), SessionId("s"), NODE)
    remote: Collected[DataChunk] = Collected()
    sender = ChunkSender(node_id=NODE, receiver=plane, replica=replica, remote=remote)
    await sender.send(chunk(0, "here"))
    elsewhere = chunk(1, "there").model_copy(update={"owner_node": STRANGER})
    await sender.send(elsewhere)
    assert await text(stream, 4) == "here"
    assert remote.items == [elsewhere], "a chunk for another node's request goes out"
