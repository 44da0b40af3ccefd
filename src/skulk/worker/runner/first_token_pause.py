"""A runner's pause after a request's first token, until the node has written it out.

When the runner's compute threads take every core it may run on (on a CPU the default:
two threads on two cores), the node's Python that passes a first token on (reading the
frame, the response's head, the write: about a millisecond here) runs beside compute
threads that never sleep between steps, and the next decode step stretches it to 2-4 ms
of the request's time to its first token. So after a step that gave a request its first
token, the runner waits until the node says that token went out (`FirstTokenOut`, for
the tasks whose `StartTaskRequest` said one would come: their streams are on this node),
or `MOST_SECONDS` at the longest, before it steps on. It costs the other requests in the
batch that wait once per request that starts; on a machine with cores to spare nothing
waits (bench/history/serving-path.md, "The first token's way out").
"""

import os

from skulk.shared.types.ids import TaskId

MOST_SECONDS = 0.005
"""The longest a runner waits for a first token's acknowledgement: a node slower than
this (loaded, or its response took another way) costs the batch no more."""


def compute_fills_cores(threads: int | None) -> bool:
    """Whether `threads` compute threads (None: the engine's default, every core) leave no
    core of this process's to the node."""
    return threads is None or threads >= len(os.sched_getaffinity(0))


class FirstTokenPause:
    """Which tasks' first tokens the runner waits to see go out. Pure bookkeeping: the
    runner reads `awaiting` after each step and waits while it is not empty."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._expected: set[TaskId] = set()  # an acknowledgement comes; no token yet
        self.awaiting: set[TaskId] = set()  # first token produced, not yet acknowledged

    def expect(self, task_id: TaskId) -> None:
        """The node will acknowledge this task's first token."""
        if self.enabled:
            self._expected.add(task_id)

    def produced(self, task_id: TaskId) -> None:
        """The task got output in this step (only its first output counts)."""
        if task_id in self._expected:
            self._expected.discard(task_id)
            self.awaiting.add(task_id)

    def acknowledged(self, task_id: TaskId) -> None:
        self.awaiting.discard(task_id)

    def ended(self, task_id: TaskId) -> None:
        """The task ended: its last chunk is not acknowledged, nothing is waited for."""
        self._expected.discard(task_id)
        self.awaiting.discard(task_id)

    def give_up(self) -> None:
        """The wait is over (`MOST_SECONDS`): a late acknowledgement changes nothing."""
        self.awaiting.clear()
