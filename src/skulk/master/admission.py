"""Admission: how many requests an instance takes before a new one is refused.

An instance runs `concurrency` requests at once (its engine's batch size, as the node
holding its rank 0 configured it) and queues at most `max_queue` more; a request finding
every instance of its model full is refused with a hint of when to retry, rather than
waiting without bound. Pure.
"""

import math
from collections.abc import Mapping
from types import MappingProxyType

from skulk.fitting.engines import engine_fit
from skulk.shared.types.ids import NodeId
from skulk.shared.types.instances import Instance
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES
from skulk.shared.types.telemetry import NodeTelemetry

# Queued requests per slot when the request names no bound (`--max-queue`).
DEFAULT_QUEUE_PER_SLOT = 16
# A slot frees about this often under load; the refusal's Retry-After scales with it.
SECONDS_PER_QUEUED_REQUEST = 1.0
MAX_RETRY_AFTER_SECONDS = 30


Readings = Mapping[NodeId, NodeTelemetry]


def concurrency(instance: Instance, nodes: Readings = MappingProxyType({})) -> int:
    """Requests the instance runs at once: the batch size its rank 0's node reads out
    (that node's `--engine-option ENGINE.max_batch`, and `--no-batching` for an instance
    wholly on it), or its engine's default when that node says nothing."""
    head = min(instance.shards.values(), key=lambda shard: shard.rank).node_id
    reading = nodes.get(head)
    if reading is None or instance.engine not in reading.batch_sizes:
        return engine_fit(instance.engine).default_batch
    if len(instance.shards) == 1 and not reading.batching:
        return 1
    return reading.batch_sizes[instance.engine]


def queue_bound(instance: Instance, max_queue: int | None,
                nodes: Readings = MappingProxyType({})) -> int:
    if max_queue is not None:
        return max_queue
    return DEFAULT_QUEUE_PER_SLOT * concurrency(instance, nodes)


def unfinished(state: State, instance: Instance) -> int:
    return sum(1 for t in state.tasks.values()
               if t.instance_id == instance.instance_id
               and t.status not in TERMINAL_TASK_STATUSES)


def has_room(state: State, instance: Instance, max_queue: int | None,
             nodes: Readings = MappingProxyType({})) -> bool:
    return unfinished(state, instance) < (concurrency(instance, nodes)
                                          + queue_bound(instance, max_queue, nodes))


def retry_after_seconds(state: State, instances: list[Instance],
                        nodes: Readings = MappingProxyType({})) -> int:
    """When a refused request may find room: the shortest queue's turn, roughly."""
    waits = [max(unfinished(state, i) - concurrency(i, nodes), 0) / concurrency(i, nodes)
             for i in instances]
    wait = min(waits, default=0.0) * SECONDS_PER_QUEUED_REQUEST
    return min(max(math.ceil(wait), 1), MAX_RETRY_AFTER_SECONDS)
