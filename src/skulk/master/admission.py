"""Admission: how many requests an instance takes before a new one is refused.

An instance runs `concurrency` requests at once (its engine's batch size) and queues at
most `max_queue` more; a request finding every instance of its model full is refused
with a hint of when to retry, rather than waiting without bound. Pure.
"""

import math

from skulk.shared.types.instances import Instance
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES
from skulk.worker.engines.registry import engine_description

# Queued requests per slot when the request names no bound (`--max-queue`).
DEFAULT_QUEUE_PER_SLOT = 16
# A slot frees about this often under load; the refusal's Retry-After scales with it.
SECONDS_PER_QUEUED_REQUEST = 1.0
MAX_RETRY_AFTER_SECONDS = 30


def concurrency(instance: Instance) -> int:
    """Requests the instance runs at once: the `max_batch` its engine's options default
    to when it batches (an engine that declares none runs one at a time)."""
    options = engine_description(instance.engine).options()
    max_batch = getattr(options, "max_batch", 1)
    return max(int(max_batch), 1) if options.batching else 1


def queue_bound(instance: Instance, max_queue: int | None) -> int:
    return DEFAULT_QUEUE_PER_SLOT * concurrency(instance) if max_queue is None else max_queue


def unfinished(state: State, instance: Instance) -> int:
    return sum(1 for t in state.tasks.values()
               if t.instance_id == instance.instance_id
               and t.status not in TERMINAL_TASK_STATUSES)


def has_room(state: State, instance: Instance, max_queue: int | None) -> bool:
    return unfinished(state, instance) < concurrency(instance) + queue_bound(instance,
                                                                             max_queue)


def retry_after_seconds(state: State, instances: list[Instance]) -> int:
    """When a refused request may find room: the shortest queue's turn, roughly."""
    waits = [max(unfinished(state, i) - concurrency(i), 0) / concurrency(i)
             for i in instances]
    wait = min(waits, default=0.0) * SECONDS_PER_QUEUED_REQUEST
    return min(max(math.ceil(wait), 1), MAX_RETRY_AFTER_SECONDS)
