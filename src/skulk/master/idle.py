"""Memory that frees itself: when each instance was last used, which ones idled past their
keep-alive, and which to evict first when a placement does not fit.

The master feeds it every event it indexes; it holds no State of its own beyond use times
(a new master starts every instance's clock afresh). Instances placed by `--serve` are
pinned and never returned; neither is one with a request in flight.
"""

from dataclasses import dataclass, field

from skulk.shared.types.events import (
    Event,
    InstanceCreated,
    InstanceDeleted,
    TaskCreated,
    TaskStatusUpdated,
)
from skulk.shared.types.ids import InstanceId
from skulk.shared.types.instances import Instance
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES

DEFAULT_KEEP_ALIVE_SECONDS = 600.0


def busy(state: State, instance: Instance) -> bool:
    return any(t.instance_id == instance.instance_id and t.status not in
               TERMINAL_TASK_STATUSES for t in state.tasks.values())


@dataclass
class IdleTracker:
    default_keep_alive: float = DEFAULT_KEEP_ALIVE_SECONDS
    _last_used: dict[InstanceId, float] = field(default_factory=dict)
    _keep_alive: dict[InstanceId, float] = field(default_factory=dict)

    def note(self, event: Event, state: State, now: float) -> None:
        """`event`, just applied to `state`, at `now`: a request or its end is a use."""
        match event:
            case InstanceCreated():
                self._last_used[event.instance.instance_id] = now
            case TaskCreated():
                self._last_used[event.task.instance_id] = now
                if event.task.params.keep_alive_seconds is not None:  # the latest asks
                    self._keep_alive[event.task.instance_id] = \
                        event.task.params.keep_alive_seconds
            case TaskStatusUpdated():
                task = state.tasks.get(event.task_id)
                if task is not None:
                    self._last_used[task.instance_id] = now
            case InstanceDeleted():
                self._last_used.pop(event.instance_id, None)
                self._keep_alive.pop(event.instance_id, None)

    def keep_alive(self, instance_id: InstanceId) -> float:
        return self._keep_alive.get(instance_id, self.default_keep_alive)

    def idle_for(self, instance_id: InstanceId, now: float) -> float:
        # An instance this master never saw used (carried from the last) starts now.
        return now - self._last_used.setdefault(instance_id, now)

    def expired(self, state: State, now: float) -> list[Instance]:
        """Unpinned, idle instances past their keep-alive (a negative one: never)."""
        return [i for i in self._removable(state)
                if 0 <= self.keep_alive(i.instance_id) <= self.idle_for(i.instance_id, now)]

    def expiry_reason(self, instance_id: InstanceId, now: float) -> str:
        """Why an expired instance is removed (the reason its removal carries)."""
        return (f"idle for {self.idle_for(instance_id, now):.0f} s (keep-alive "
                f"{self.keep_alive(instance_id):.0f} s)")

    def least_recently_used(self, state: State, now: float) -> list[Instance]:
        """Unpinned, idle instances, the longest idle first: what to evict for room."""
        return sorted(self._removable(state),
                      key=lambda i: (-self.idle_for(i.instance_id, now), i.instance_id))

    def _removable(self, state: State) -> list[Instance]:
        return [i for i in state.instances.values() if not i.pinned and not busy(state, i)]
