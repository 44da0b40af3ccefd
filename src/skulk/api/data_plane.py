"""Receiving the data plane: chunks and rank spans for the requests this node took.

A chunk is delivered only if the node that signed it holds a rank of the instance serving
its request, so no other member can write into someone else's answer. A chunk can outrun
the `TaskCreated` that tells this node which instance serves the request (they come from
different publishers): such chunks wait, bounded, until the task is known. A chunk for a
request taken by the node that computed it never leaves the node (`ChunkSender` hands it
to `take_chunk` directly): the per-token path of a one-node cluster costs no sealing,
transport loopback or opening.
"""

from collections import OrderedDict
from collections.abc import AsyncIterator

from skulk.api.streams import StreamRegistry
from skulk.api.tracing import TraceStore
from skulk.routing.dropped import DroppedMessages
from skulk.routing.router import Received
from skulk.shared.channels import Sender
from skulk.shared.replica import StateReplica
from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.ids import CommandId, NodeId
from skulk.shared.types.state import State
from skulk.shared.types.traces import RankSpans

MAX_WAITING_COMMANDS = 256
MAX_WAITING_CHUNKS = 256
# Ranks of recently served requests, for spans that arrive after the task is gone.
MAX_REMEMBERED_REQUESTS = 1024


def ranks_serving(state: State, command_id: CommandId) -> frozenset[NodeId] | None:
    """The nodes holding a rank of the instance serving `command_id` (None: the task is
    not known here yet)."""
    task = state.task_for_command(command_id)
    if task is None:
        return None
    instance = state.instances.get(task.instance_id)
    if instance is None:
        return frozenset()
    return frozenset(shard.node_id for shard in instance.shards.values())


class DataPlaneReceiver:
    def __init__(self, *, streams: StreamRegistry, traces: TraceStore,
                 dropped: DroppedMessages) -> None:
        self._streams = streams
        self._traces = traces
        self._dropped = dropped
        self._waiting: dict[CommandId, list[Received[DataChunk]]] = {}
        self._ranks: OrderedDict[CommandId, frozenset[NodeId]] = OrderedDict()

    async def receive_chunks(self, arrivals: AsyncIterator[Received[DataChunk]],
                             replica: StateReplica) -> None:
        async for arrival in arrivals:
            self.take_chunk(arrival, replica.state)

    def take_chunk(self, arrival: Received[DataChunk], state: State) -> None:
        self.take(arrival.value, arrival.origin, state)

    def take(self, chunk: DataChunk, origin: NodeId, state: State) -> None:
        """`take_chunk` of a chunk signed by `origin`, with no `Received` built for it
        unless it must wait (a node's own chunks come here once per token)."""
        command_id = chunk.command_id
        if not self._streams.is_open(command_id):
            return
        ranks = self._ranks.get(command_id)  # a request's instance does not change
        if ranks is None:
            ranks = ranks_serving(state, command_id)
            if ranks is None:
                self._wait(Received(origin, chunk))
                return
            self._remember(command_id, ranks)
        if origin in ranks:
            self._streams.dispatch(chunk)
        else:
            self._dropped.count("data", "not_a_rank_of_the_request", 0)

    def _remember(self, command_id: CommandId, ranks: frozenset[NodeId]) -> None:
        self._ranks[command_id] = ranks
        self._ranks.move_to_end(command_id)
        if len(self._ranks) > MAX_REMEMBERED_REQUESTS:
            self._ranks.popitem(last=False)

    def state_changed(self, state: State) -> None:
        """Deliver or drop the chunks that waited for their task: each waiting request is
        looked up once per applied event, its chunks only once it is known (or its stream
        closed). Trying every waiting chunk again on every event, each a scan of the tasks,
        grew with requests × chunks × tasks and stalled a node that took hundreds of
        streams from another node's model."""
        if not self._waiting:
            return
        known = {task.command_id for task in state.tasks.values()}
        ready = [command_id for command_id in self._waiting
                 if command_id in known or not self._streams.is_open(command_id)]
        for command_id in ready:
            for arrival in self._waiting.pop(command_id):
                self.take_chunk(arrival, state)

    def _wait(self, arrival: Received[DataChunk]) -> None:
        queue = self._waiting.get(arrival.value.command_id)
        if queue is None:
            if len(self._waiting) >= MAX_WAITING_COMMANDS:
                self._dropped.count("data", "too_many_unknown_requests", 0)
                return
            queue = self._waiting[arrival.value.command_id] = []
        if len(queue) >= MAX_WAITING_CHUNKS:
            self._dropped.count("data", "too_many_early_chunks", 0)
            return
        queue.append(arrival)

    async def receive_spans(self, arrivals: AsyncIterator[Received[RankSpans]],
                            replica: StateReplica) -> None:
        """Other ranks' spans join the trace this node keeps for the request."""
        async for arrival in arrivals:
            spans = arrival.value
            trace = self._traces.get(spans.command_id)
            if trace is None:
                continue
            ranks = ranks_serving(replica.state, spans.command_id) or self._ranks.get(
                spans.command_id, frozenset())
            if arrival.origin in ranks:
                trace.spans += spans.spans
            else:
                self._dropped.count("trace_spans", "not_a_rank_of_the_request", 0)



class ChunkSender:
    """The worker's `Sender[DataChunk]` (and `InstantSender`): a chunk for a request this
    node took goes to its stream here; any other goes on `remote` (the data plane, to
    the owning node)."""

    def __init__(self, *, node_id: NodeId, receiver: DataPlaneReceiver,
                 replica: StateReplica, remote: Sender[DataChunk]) -> None:
        self._node_id = node_id
        self._receiver = receiver
        self._replica = replica
        self._remote = remote

    async def send(self, chunk: DataChunk, /) -> None:
        if not self.send_now(chunk):
            await self._remote.send(chunk)

    def send_now(self, chunk: DataChunk, /) -> bool:
        """A chunk for a request taken here goes to its stream at once (no sealing,
        loopback or opening, and no task between the runner's pipe and the stream);
        False for any other, which must travel."""
        if chunk.owner_node != self._node_id:
            return False
        self._receiver.take(chunk, self._node_id, self._replica.state)
        return True
