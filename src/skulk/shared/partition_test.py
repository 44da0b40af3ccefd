from skulk.shared.partition import Standing, agreed_next, refusal
from skulk.shared.types.commands import (
    CancelTask,
    DeleteInstance,
    ForgetMember,
    PlaceInstance,
    TextGeneration,
)
from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId
from skulk.testing import factories as f

A, B, C = NodeId("a"), NodeId("b"), NodeId("c")
PLACE = PlaceInstance(command_id=CommandId("p"), instance_id=InstanceId("i"),
                      model_id=ModelId("m"))
CANCEL = CancelTask(command_id=CommandId("c"), target_command_id=CommandId("x"))


def test_more_than_half_of_the_agreed_members_is_a_majority() -> None:
    assert Standing(frozenset({A, B}), frozenset({A, B, C})).majority
    assert not Standing(frozenset({A}), frozenset({A, B, C})).majority
    assert not Standing(frozenset({A}), frozenset({A, B})).majority, "half is not more"
    assert Standing(frozenset({A}), frozenset()).majority, "a new cluster has no minority"


def test_only_a_strict_minority_refuses_and_then_what_would_start_something() -> None:
    minority = Standing(frozenset({C}), frozenset({A, B, C}))
    assert refusal(PLACE, minority, "available") is None, "it accepts and carries at heal"
    reason = refusal(PLACE, minority, "majority")
    assert reason is not None and "1 of the 3 members" in reason
    assert refusal(DeleteInstance(command_id=CommandId("d"), instance_id=InstanceId("i")),
                   minority, "majority") is not None
    assert refusal(CANCEL, minority, "majority") is None, "its master drops it instead"
    assert refusal(TextGeneration(command_id=CommandId("g"), owner_node=A,
                                  params=f.params()), minority, "majority") is not None
    assert refusal(ForgetMember(command_id=CommandId("f"), node_id=A), minority,
                   "majority") is None, "the way out is always open"
    assert refusal(PLACE, Standing(frozenset({A, B}), frozenset({A, B, C})), "majority") is None


def test_members_join_the_agreement_at_once_and_leave_it_after_a_grace() -> None:
    assert agreed_next({A}, {A, B}, {}, now=0.0, grace=3.0) == frozenset({A, B})
    assert agreed_next({A, B, C}, {A, B}, {C: 0.0}, now=1.0, grace=3.0) is None
    assert agreed_next({A, B, C}, {A, B}, {C: 0.0}, now=3.0, grace=3.0) == frozenset({A, B})
    assert agreed_next({A, B}, {A, B}, {}, now=9.0, grace=3.0) is None
