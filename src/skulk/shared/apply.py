"""`apply(state, indexed_event) -> State`: the one place State changes.

Pure and exhaustive: every node that applies the same indexed events gets the same State.
"""

from typing import assert_never

from skulk.shared.model_card_state import (
    forget_holder,
    model_card_added,
    model_card_removed,
)
from skulk.shared.types.events import (
    CommandRejected,
    Event,
    IndexedEvent,
    InstanceCreated,
    InstanceDeleted,
    MembershipAgreed,
    ModelCardAdded,
    ModelCardRemoved,
    NodeFailureNoted,
    NodeRevoked,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
    WeightsFetchProgress,
    WeightsReady,
)
from skulk.shared.types.runners import RunnerFetching
from skulk.shared.types.state import NodeCoolOff, State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES


class EventOutOfOrder(ValueError):
    """An event arrived whose index is not the next one; the caller must buffer or replay."""


def apply(state: State, indexed: IndexedEvent) -> State:
    """Apply one indexed event; a snapshot replaces the state whatever its index."""
    event = indexed.event
    if isinstance(event, StateSnapshotHydrated):
        return event.state.model_copy(update={"last_event_applied_idx": indexed.index})
    expected = state.last_event_applied_idx + 1
    if indexed.index != expected:
        raise EventOutOfOrder(f"expected event {expected}, got {indexed.index}")
    update: dict[str, object] = {"last_event_applied_idx": indexed.index}
    if indexed.source is not None:
        update["producer_marks"] = {**state.producer_marks,
                                    indexed.source.origin: indexed.source}
    return _apply_event(state, event).model_copy(update=update)


def _apply_event(state: State, event: Event) -> State:
    match event:
        case InstanceCreated():
            return _instance_created(state, event)
        case InstanceDeleted():
            return _instance_deleted(state, event)
        case RunnerStatusUpdated():
            return _runner_status_updated(state, event)
        case WeightsFetchProgress():
            return _runner_status_updated(state, RunnerStatusUpdated(
                runner_id=event.runner_id, status=RunnerFetching(
                    done_bytes=event.done_bytes, total_bytes=event.total_bytes,
                    source=event.source)))
        case WeightsReady():
            return _runner_status_updated(state, RunnerStatusUpdated(
                runner_id=event.runner_id, status=RunnerFetching(
                    done_bytes=event.total_bytes, total_bytes=event.total_bytes,
                    source=event.source)))
        case ModelCardAdded():
            return model_card_added(state, event)
        case ModelCardRemoved():
            return model_card_removed(state, event.model_id, event.node_id)
        case TaskCreated():
            return _task_created(state, event)
        case TaskStatusUpdated():
            return _task_status_updated(state, event)
        case TaskDeleted():
            return _task_deleted(state, event)
        case CommandRejected():
            # A notification for the request's owner; it changes nothing replicated.
            return state
        case StateSnapshotHydrated():
            return event.state
        case NodeRevoked():
            return _node_revoked(state, event)
        case MembershipAgreed():
            return state.model_copy(update={"members": sorted(set(event.members))})
        case NodeFailureNoted():
            return _node_failure_noted(state, event)
        case _:
            assert_never(event)


def _node_failure_noted(state: State, event: NodeFailureNoted) -> State:
    cool_off = NodeCoolOff(reason=event.reason, until=event.until, failures=event.failures)
    return state.model_copy(update={"node_cool_offs": {**state.node_cool_offs,
                                                        event.node_id: cool_off}})


def _node_revoked(state: State, event: NodeRevoked) -> State:
    if event.node_id in state.revoked_nodes:
        return state
    # An expelled node's store is no longer the cluster's: its announced cards go with it.
    state = forget_holder(state, event.node_id)
    return state.model_copy(update={"revoked_nodes": [*state.revoked_nodes, event.node_id]})


def _instance_created(state: State, event: InstanceCreated) -> State:
    instance = event.instance
    return state.model_copy(
        update={"instances": {**state.instances, instance.instance_id: instance}}
    )


def _instance_deleted(state: State, event: InstanceDeleted) -> State:
    instance = state.instances.get(event.instance_id)
    if instance is None:
        return state
    instances = {k: v for k, v in state.instances.items() if k != event.instance_id}
    runners = {k: v for k, v in state.runners.items() if k not in instance.shards}
    return state.model_copy(update={"instances": instances, "runners": runners})


def _runner_status_updated(state: State, event: RunnerStatusUpdated) -> State:
    # A report about a runner whose instance is gone (late shutdown report) is dropped,
    # so deleted instances never leave runner entries behind.
    owned = any(event.runner_id in i.shards for i in state.instances.values())
    if not owned:
        return state
    return state.model_copy(
        update={"runners": {**state.runners, event.runner_id: event.status}}
    )


def _task_created(state: State, event: TaskCreated) -> State:
    task = event.task
    return state.model_copy(update={"tasks": {**state.tasks, task.task_id: task}})


def _task_status_updated(state: State, event: TaskStatusUpdated) -> State:
    task = state.tasks.get(event.task_id)
    # Terminal statuses are final: a late "running" never revives a finished task.
    if task is None or task.status in TERMINAL_TASK_STATUSES:
        return state
    updated = task.model_copy(update={"status": event.status, "error": event.error})
    return state.model_copy(update={"tasks": {**state.tasks, task.task_id: updated}})


def _task_deleted(state: State, event: TaskDeleted) -> State:
    tasks = {k: v for k, v in state.tasks.items() if k != event.task_id}
    return state.model_copy(update={"tasks": tasks})
