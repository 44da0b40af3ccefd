"""The rings: each sample is the difference between two readings of the node's counters,
with its gauges (queue, CPU, memory, VRAM) as they are at the end of the interval."""

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from skulk.api.history.samples import (
    RING_CAPACITY,
    InstanceSample,
    Marker,
    NodeSample,
    RequestCounts,
)
from skulk.api.history.totals import CounterTotals, difference
from skulk.api.history.wire import instance_columns, node_columns

MARKER_CAPACITY = 1000


@dataclass(frozen=True)
class InstanceQueue:
    model_id: str
    depth: int


@dataclass(frozen=True)
class NodeGauges:
    """The node's gauges at one moment."""

    queue_depth: int = 0
    cpu_percent: float = 0.0
    memory_used_bytes: int = 0
    memory_total_bytes: int = 0
    vram_used_bytes: int = 0
    vram_total_bytes: int = 0
    runner_failures: int = 0  # since the node started
    # Every instance in the State, with its unfinished requests.
    instances: Mapping[str, InstanceQueue] = field(default_factory=dict)


@dataclass(frozen=True)
class _Reading:
    at: float
    totals: CounterTotals
    runner_failures: int


class MetricsHistory:
    """The last `capacity` samples of this node and of each instance, and the latest
    markers. The first reading only sets the baseline."""

    def __init__(self, capacity: int = RING_CAPACITY,
                 marker_capacity: int = MARKER_CAPACITY) -> None:
        self._capacity = capacity
        self.nodes: deque[NodeSample] = deque(maxlen=capacity)
        self.instances: dict[str, deque[InstanceSample]] = {}
        self.markers: deque[Marker] = deque(maxlen=marker_capacity)
        self._previous: _Reading | None = None

    def record(self, at: float, totals: CounterTotals, gauges: NodeGauges) -> None:
        previous, self._previous = self._previous, _Reading(at, totals, gauges.runner_failures)
        if previous is None or at <= previous.at:
            return
        seconds = at - previous.at
        self.nodes.append(NodeSample(
            at=at, seconds=seconds, requests=difference(totals.requests, previous.totals.requests),
            refused=totals.refused - previous.totals.refused, queue_depth=gauges.queue_depth,
            cpu_percent=gauges.cpu_percent, memory_used_bytes=gauges.memory_used_bytes,
            memory_total_bytes=gauges.memory_total_bytes,
            vram_used_bytes=gauges.vram_used_bytes, vram_total_bytes=gauges.vram_total_bytes,
            runner_restarts=max(gauges.runner_failures - previous.runner_failures, 0)))
        for instance_id in sorted(set(gauges.instances) | set(totals.instances)):
            counts = difference(totals.instances.get(instance_id, RequestCounts()),
                                previous.totals.instances.get(instance_id, RequestCounts()))
            queue = gauges.instances.get(instance_id)
            if queue is None and counts.generations == 0 and counts.tokens == 0:
                continue  # an instance gone, with nothing more to say
            ring = self.instances.setdefault(instance_id, deque(maxlen=self._capacity))
            model_id = queue.model_id if queue else (ring[-1].model_id if ring else "")
            ring.append(InstanceSample(at=at, seconds=seconds, instance_id=instance_id,
                                       model_id=model_id, requests=counts,
                                       queue_depth=queue.depth if queue else 0))
        oldest = self.nodes[0].at
        for instance_id in [i for i, ring in self.instances.items() if ring[-1].at < oldest]:
            del self.instances[instance_id]  # nothing of it left in the window

    def note(self, marker: Marker) -> None:
        self.markers.append(marker)

    def answer(self, since: float = 0.0) -> dict[str, object]:
        """What a peer read of `/v1/history/node` returns: samples after `since` as
        columns (`wire.py`), and markers."""
        return {
            "nodes": node_columns([s for s in self.nodes if s.at > since]),
            # By time, so a reader's copy stays oldest first (it ages out from the front).
            "instances": instance_columns(sorted(
                (s for ring in self.instances.values() for s in ring if s.at > since),
                key=lambda s: s.at)),
            "markers": [m.as_json() for m in self.markers if m.at > since]}
