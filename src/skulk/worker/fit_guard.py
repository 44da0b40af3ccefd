"""The worker's own check before it starts a shard: does this node's memory, right now,
still admit what the master planned? The master placed from readings that may be seconds
old; a node that has since filled up refuses, and the master places one node wider."""

from skulk.master.placement.memory import admits, gib, shard_need_bytes, shard_share, usable_bytes
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.worker.engines.registry import engine_description


def refusal(card: ModelCard, instance: Instance, shard: ShardAssignment,
            reading: NodeTelemetry) -> str | None:
    """Why this node cannot hold `shard` now, or None when it can."""
    if card.source_for(engine_description(instance.engine).weight_format) is None:
        return None  # nothing to size it by; the load itself will say what is missing
    need = shard_need_bytes(card, instance.engine,
                            shard_share(card, instance.sharding, shard), reading)
    usable = usable_bytes(reading)
    if admits(need, usable):
        return None
    return (f"rank {shard.rank} of {instance.model_id} needs {gib(need)} GiB and this node "
            f"has {gib(usable)} GiB usable now")
