"""Seeding a new master's session from the State it already replicated.

Runners belong to instances, not to sessions: everything that still runs on a live node is
carried, so healthy runners keep their loaded models across a change of master.
"""

from collections.abc import Set

from skulk.shared.types.ids import InstanceId, NodeId
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES


def seed_for_new_session(replica: State, live_nodes: Set[NodeId],
                         seen_members: Set[NodeId] = frozenset()) -> State:
    """Instances and producer marks carry; runner statuses carry for live nodes; tasks
    carry if all their instance's nodes live, and are failed with a reason otherwise.

    The agreed membership carries; when none reached this node yet (a partition in a new
    cluster's first second), the members it has seen stand in for it, so a node cut off
    alone knows it is a minority (and keeps what it accepts for the heal) instead of
    taking an empty agreement for a cluster of its own.
    """
    runners = {
        runner_id: status
        for instance in replica.instances.values()
        for runner_id, shard in instance.shards.items()
        if shard.node_id in live_nodes and (status := replica.runners.get(runner_id))
    }
    whole: set[InstanceId] = {
        instance_id for instance_id, instance in replica.instances.items()
        if all(shard.node_id in live_nodes for shard in instance.shards.values())
    }
    tasks = {}
    for task_id, task in replica.tasks.items():
        if task.instance_id not in whole and task.status not in TERMINAL_TASK_STATUSES:
            task = task.model_copy(update={
                "status": "failed",
                "error": "the master changed while a node serving this request was lost; "
                         "retry the request"})
        tasks[task_id] = task
    # Producer marks carry so the new master drops resends of events already indexed.
    # Announced cards carry too: a holder that left still holds its files when it returns.
    return State(instances=dict(replica.instances), runners=runners, tasks=tasks,
                 producer_marks=dict(replica.producer_marks),
                 model_cards=dict(replica.model_cards),
                 model_card_holders=dict(replica.model_card_holders),
                 revoked_nodes=list(replica.revoked_nodes),
                 members=list(replica.members)
                 or sorted(set(seen_members) - set(replica.revoked_nodes)))
