"""Markers from the event log: which applied events an operator wants to see on a chart.

Pure: the State before the event (to tell who joined or left, and which instance a
runner served) and the master followed so far (to tell a new master from a catch-up).
"""

from skulk.api.history.samples import Marker
from skulk.shared.types.events import (
    IndexedEvent,
    InstanceCreated,
    InstanceDeleted,
    MembershipAgreed,
    NodeFailureNoted,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
)
from skulk.shared.types.ids import NodeId
from skulk.shared.types.runners import RunnerFailed
from skulk.shared.types.state import State

TEXT_CHARS = 240
# The only kinds of event that make markers (the history's subscription takes these).
MARKING_KINDS = (InstanceCreated, InstanceDeleted, RunnerStatusUpdated, NodeFailureNoted,
                 MembershipAgreed, StateSnapshotHydrated)


def _short(text: str) -> str:
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 1] + "…"


def _instance_of(before: State, runner_id: str) -> str | None:
    for instance in before.instances.values():
        if runner_id in instance.shards:
            return instance.instance_id
    return None


def markers_of(before: State, previous_master: NodeId | None, indexed: IndexedEvent,
               at: float) -> list[Marker]:
    """The markers one applied event makes (most make none)."""
    event = indexed.event
    match event:
        case InstanceCreated(instance=instance):
            nodes = sorted({shard.node_id for shard in instance.shards.values()})
            return [Marker(at, "placement", _short(
                f"{instance.model_id} placed on {', '.join(nodes)}"),
                instance_id=instance.instance_id)]
        case InstanceDeleted(instance_id=instance_id, reason=reason, replaced_by=replaced):
            if replaced is not None:
                return [Marker(at, "failover", _short(
                    f"{instance_id} placed again as {replaced}: {reason}"),
                    instance_id=instance_id)]
            return [Marker(at, "eviction", _short(f"{instance_id} removed: {reason}"),
                           instance_id=instance_id)]
        case RunnerStatusUpdated(runner_id=runner_id, status=RunnerFailed(error=error)):
            runner = before.runners.get(runner_id)
            if isinstance(runner, RunnerFailed):
                return []  # already failed: a repeated report
            return [Marker(at, "failover", _short(f"runner {runner_id} failed: {error}"),
                           instance_id=_instance_of(before, runner_id))]
        case NodeFailureNoted(node_id=node_id, reason=reason, failures=failures):
            return [Marker(at, "failover", _short(
                f"{node_id} noted failing ({failures} in a row): {reason}"), node_id=node_id)]
        case MembershipAgreed(members=members):
            joined = sorted(set(members) - set(before.members))
            left = sorted(set(before.members) - set(members))
            if not before.members:
                return []  # the first agreement names everyone: nobody joined then
            return [*(Marker(at, "join", f"{n} joined", node_id=n) for n in joined),
                    *(Marker(at, "leave", f"{n} left", node_id=n) for n in left)]
        case StateSnapshotHydrated():
            if previous_master is None or indexed.master_node == previous_master:
                return []
            return [Marker(at, "master", f"{indexed.master_node} is master (was "
                           f"{previous_master})", node_id=indexed.master_node)]
        case _:
            return []
