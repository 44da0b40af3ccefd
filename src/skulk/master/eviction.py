"""Making room: when a placement does not fit, the least recently used idle instances go
first, and only those on the nodes the new instance lands on. Pure."""

from collections.abc import Mapping, Sequence

from skulk.fitting.memory import shard_need_bytes, shard_share
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.ids import NodeId
from skulk.shared.types.instances import Instance
from skulk.shared.types.telemetry import NodeTelemetry


def freed(nodes: Mapping[NodeId, NodeTelemetry], gone: Sequence[Instance],
          catalog: ModelCatalog) -> dict[NodeId, NodeTelemetry]:
    """The nodes' readings as they would be without `gone`: each shard's need back."""
    readings = dict(nodes)
    for instance in gone:
        card = catalog.resolve(instance.model_id)
        if card is None:
            continue
        for shard in instance.shards.values():
            node = readings.get(shard.node_id)
            if node is None:
                continue
            need = shard_need_bytes(card, instance.engine,
                                    shard_share(card, instance.sharding, shard), node)
            readings[shard.node_id] = node.model_copy(update={
                "memory_available_bytes": node.memory_available_bytes + need})
    return readings


def on_nodes_of(placed: Instance, gone: Sequence[Instance]) -> list[Instance]:
    """The evicted instances that share a node with `placed` (the others need not go)."""
    used = {s.node_id for s in placed.shards.values()}
    return [g for g in gone if any(s.node_id in used for s in g.shards.values())]

