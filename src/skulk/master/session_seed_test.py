from skulk.master.session_seed import seed_for_new_session
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId, TaskId
from skulk.shared.types.runners import RunnerReady
from skulk.shared.types.state import State
from skulk.testing import factories as f

A, B = NodeId("node-a"), NodeId("node-b")


def replica() -> State:
    return State(
        instances={InstanceId("inst-1"): f.instance("inst-1", "run-1", A),
                   InstanceId("inst-2"): f.instance("inst-2", "run-2", B)},
        runners={RunnerId("run-1"): RunnerReady(), RunnerId("run-2"): RunnerReady()},
        tasks={TaskId("t1"): f.task("t1", "inst-1", "c1"),
               TaskId("t2"): f.task("t2", "inst-2", "c2")},
        last_event_applied_idx=41)


def test_instances_carry_and_runners_of_live_nodes_keep_their_status() -> None:
    seed = seed_for_new_session(replica(), {A})
    assert set(seed.instances) == {"inst-1", "inst-2"}
    assert set(seed.runners) == {"run-1"}
    assert seed.last_event_applied_idx == -1


def test_tasks_on_lost_nodes_fail_with_a_reason_and_others_go_on() -> None:
    seed = seed_for_new_session(replica(), {A})
    assert seed.tasks[TaskId("t1")].status == "pending"
    assert seed.tasks[TaskId("t2")].status == "failed"
    assert "retry" in (seed.tasks[TaskId("t2")].error or "")


def test_the_agreed_membership_carries_or_the_members_seen_stand_in() -> None:
    agreed = replica().model_copy(update={"members": [A, B]})
    assert seed_for_new_session(agreed, {A}, seen_members={A}).members == [A, B]
    # Cut off before the first agreement reached it: it has seen both, so it is 1 of 2.
    assert seed_for_new_session(replica(), {A}, seen_members={B, A}).members == [A, B]
    assert seed_for_new_session(replica(), {A}).members == []  # a new cluster's first
