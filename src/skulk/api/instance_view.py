"""Instances as the API shows them: a status derived from the runners, ranks in order.

The views extend the shared `Instance` and `ShardAssignment`, so a field means the same
here as in the State; the shard map is shown as `ranks`.
"""

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from skulk.shared.types.ids import ModelId, NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.runners import RunnerFailed, RunnerFetching, RunnerShutdown, is_serving
from skulk.shared.types.state import State

InstanceStatus = Literal["pending", "loading", "ready", "failed"]


class RankView(ShardAssignment):
    """One rank of an instance: where it runs, what it holds, how its runner is doing."""

    runner_id: RunnerId = Field(description="The rank's runner.")
    runner_status: str = Field(description="The runner's last reported status, or `pending`.")
    fetch: RunnerFetching | None = Field(
        default=None, description="While the rank's weights are fetched: bytes done, bytes "
        "in all, and from where.")
    error: str | None = Field(default=None, description="Why the rank's runner failed, "
                              "while its status is `failed`.")


class InstanceView(Instance):
    """An instance and its ranks; `ready` when every rank serves."""

    # Shown as `ranks`; the drafter and the replacement count are read from `/cluster`
    # and `/state`.
    shards: Mapping[RunnerId, ShardAssignment] = Field(exclude=True, description="Shown as "
                                                       "`ranks`.")
    drafter_node: NodeId | None = Field(default=None, exclude=True,
                                        description="Not shown here; see `/cluster`.")
    replaced: int = Field(default=0, exclude=True, description="Not shown here; see `/state`.")
    status: InstanceStatus = Field(description="`ready` when every rank serves.")
    ranks: list[RankView] = Field(description="Ranks in order.")


def instance_status(state: State, instance: Instance) -> InstanceStatus:
    statuses = [state.runners.get(r) for r in instance.shards]
    if any(isinstance(s, RunnerFailed | RunnerShutdown) for s in statuses):
        return "failed"
    if all(is_serving(s) for s in statuses):
        return "ready"
    if all(s is None for s in statuses):
        return "pending"
    return "loading"


def has_ready_instance(state: State, model_id: ModelId) -> bool:
    return any(instance_status(state, i) == "ready" for i in state.instances_of(model_id))


def instance_view(state: State, instance: Instance) -> InstanceView:
    """The instance with its status and ranks, as `/instance/{id}` shows it."""
    ranks = [RankView(**dict(shard), runner_id=runner_id,
                      runner_status=state.runners[runner_id].kind
                      if runner_id in state.runners else "pending",
                      fetch=_fetching(state, runner_id), error=_error(state, runner_id))
             for runner_id, shard in sorted(instance.shards.items(), key=lambda kv: kv[1].rank)]
    return InstanceView(**dict(instance), status=instance_status(state, instance), ranks=ranks)


def _fetching(state: State, runner_id: RunnerId) -> RunnerFetching | None:
    status = state.runners.get(runner_id)
    return status if isinstance(status, RunnerFetching) else None


def _error(state: State, runner_id: RunnerId) -> str | None:
    status = state.runners.get(runner_id)
    return status.error if isinstance(status, RunnerFailed) else None


def instance_body(state: State, instance: Instance) -> dict[str, object]:
    """The instance as `/cluster` lists it: with its drafter node, without ring addresses."""
    shown = instance_view(state, instance).model_dump(
        mode="json", exclude={"ring_port": True, "ranks": {"__all__": {"ring_host"}}})
    return {**shown, "drafter_node": instance.drafter_node}
