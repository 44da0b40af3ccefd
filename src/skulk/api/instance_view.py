"""Derived views of instances for the API: status from runner statuses, ranks."""

from typing import Literal

from skulk.shared.types.ids import ModelId
from skulk.shared.types.instances import Instance
from skulk.shared.types.runners import RunnerFailed, RunnerShutdown, is_serving
from skulk.shared.types.state import State

InstanceStatus = Literal["pending", "loading", "ready", "failed"]


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


def instance_body(state: State, instance: Instance) -> dict[str, object]:
    ranks = [
        {"runner_id": runner_id, "node_id": shard.node_id, "rank": shard.rank,
         "world_size": shard.world_size, "start_layer": shard.start_layer,
         "end_layer": shard.end_layer,
         "runner_status": state.runners[runner_id].kind if runner_id in state.runners
         else "pending"}
        for runner_id, shard in sorted(instance.shards.items(), key=lambda kv: kv[1].rank)
    ]
    return {"instance_id": instance.instance_id, "model_id": instance.model_id,
            "engine": instance.engine, "sharding": instance.sharding,
            "context_token_limit": instance.context_token_limit,
            "drafter_node": instance.drafter_node,
            "status": instance_status(state, instance), "ranks": ranks}
