from skulk.shared.removed_instances import RemovedInstances
from skulk.shared.types.events import InstanceCreated, InstanceDeleted
from skulk.shared.types.ids import InstanceId, ModelId
from skulk.testing import factories as f


def test_a_removal_is_kept_with_its_model_reason_and_replacement() -> None:
    removed = RemovedInstances()
    state = f.state_with(InstanceCreated(instance=f.instance()))
    removed.note(state, InstanceCreated(instance=f.instance("inst-2")))  # not a removal
    removed.note(state, InstanceDeleted(instance_id=InstanceId("inst-9"), reason="unknown"))
    assert removed.last_seq == 0  # nothing this node held: nothing to tell
    removed.note(state, InstanceDeleted(instance_id=InstanceId("inst-1"), reason="gave up",
                                        replaced_by=InstanceId("inst-3")))
    removal = removed.get(InstanceId("inst-1"))
    assert removal is not None and removed.last_seq == removal.seq == 1
    assert (removal.model_id, removal.reason, removal.replaced_by) == (
        f.instance().model_id, "gave up", "inst-3")


def test_the_newest_removal_of_a_model_after_a_point_and_the_oldest_forgotten() -> None:
    removed = RemovedInstances(capacity=2)
    for name in ("a", "b", "c"):
        state = f.state_with(InstanceCreated(instance=f.instance(name)))
        removed.note(state, InstanceDeleted(instance_id=InstanceId(name), reason=name))
    model = f.instance().model_id
    assert removed.get(InstanceId("a")) is None  # past the capacity
    latest = removed.latest_of_model(model)
    assert latest is not None and latest.reason == "c"
    assert removed.latest_of_model(model, after_seq=3) is None
    assert removed.latest_of_model(ModelId("other")) is None
