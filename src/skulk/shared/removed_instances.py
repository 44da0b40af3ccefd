"""The instances a node saw removed, and why: whoever placed or waited for one asks after
it is gone from the State (`skulk place`, a request that placed its model), and the State
keeps nothing of a removed instance."""

from collections import OrderedDict
from dataclasses import dataclass

from skulk.shared.types.events import Event, InstanceDeleted
from skulk.shared.types.ids import InstanceId, ModelId
from skulk.shared.types.state import State

DEFAULT_CAPACITY = 512


@dataclass(frozen=True)
class Removal:
    """One removed instance: its model, the master's reason, what replaced it."""

    seq: int
    instance_id: InstanceId
    model_id: ModelId
    reason: str
    replaced_by: InstanceId | None


class RemovedInstances:
    """The last `capacity` removals, each numbered in the order this node applied them."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._removals: OrderedDict[InstanceId, Removal] = OrderedDict()
        self._capacity = capacity
        self._last_seq = 0

    @property
    def last_seq(self) -> int:
        """Number of the newest removal; 0 before any."""
        return self._last_seq

    def note(self, before: State, event: Event) -> None:
        """Record `event` if it removes an instance `before` (the State it applies to)
        holds; the State after it no longer knows the instance's model."""
        if not isinstance(event, InstanceDeleted):
            return
        instance = before.instances.get(event.instance_id)
        if instance is None:
            return
        self._last_seq += 1
        self._removals[event.instance_id] = Removal(
            seq=self._last_seq, instance_id=event.instance_id, model_id=instance.model_id,
            reason=event.reason, replaced_by=event.replaced_by)
        while len(self._removals) > self._capacity:
            self._removals.popitem(last=False)

    def get(self, instance_id: InstanceId) -> Removal | None:
        return self._removals.get(instance_id)

    def latest_of_model(self, model_id: ModelId, after_seq: int = 0) -> Removal | None:
        """The newest removal of an instance of `model_id` numbered above `after_seq`."""
        for removal in reversed(self._removals.values()):
            if removal.seq <= after_seq:
                return None
            if removal.model_id == model_id:
                return removal
        return None
