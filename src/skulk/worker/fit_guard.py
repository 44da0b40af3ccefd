"""The worker's own check before it starts a shard: does this node's memory, right now,
still admit what the master planned? The master placed from readings that may be seconds
old; a node that has since filled up refuses, and the master places one node wider.

The check is placement's own arithmetic with the GPU layers the master stamped, so a
shard the master admitted is refused only when the node's memory changed since."""

from skulk.fitting.engines import engine_fit
from skulk.fitting.memory import gib, shard_share, usable_bytes
from skulk.fitting.offload import shard_need
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.telemetry import NodeTelemetry


def refusal(card: ModelCard, instance: Instance, shard: ShardAssignment,
            reading: NodeTelemetry) -> str | None:
    """Why this node cannot hold `shard` now, or None when it can."""
    if card.source_for(engine_fit(instance.engine).weight_format) is None:
        return None  # nothing to size it by; the load itself will say what is missing
    need = shard_need(card, instance.engine, shard_share(card, instance.sharding, shard),
                      reading, gpu_layers=shard.gpu_layers)
    usable = usable_bytes(reading)
    if need.admitted_by(usable):
        return None
    gpu = (f" with {need.gpu_layers} layers in {gib(need.vram_bytes)} of GPU memory (free "
           f"now: {gib(need.vram_usable_bytes)})" if need.vram_bytes else "")
    return (f"rank {shard.rank} of {instance.model_id} needs {gib(need.system_bytes)}{gpu} "
            f"and this node has {gib(usable)} usable now")
