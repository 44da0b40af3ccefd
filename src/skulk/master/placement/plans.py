"""A plan: one engine, one sharding, a node per rank with its layers and its memory fit."""

from collections.abc import Sequence
from dataclasses import dataclass

from skulk.master.placement.layers import (
    layer_ranges,
    pipeline_split_problem,
    proportional_layer_counts,
    tensor_split_problem,
)
from skulk.master.placement.memory import (
    ShardShare,
    admits,
    gib,
    shard_need_bytes,
    usable_bytes,
)
from skulk.shared.types.ids import NodeId
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry


@dataclass(frozen=True)
class RankFit:
    """One rank of a plan and whether its node admits it."""

    node_id: NodeId
    start_layer: int
    end_layer: int
    needed_bytes: int
    usable_bytes: int

    @property
    def fits(self) -> bool:
        return admits(self.needed_bytes, self.usable_bytes)

    def shortfall(self, engine: EngineName, width: int) -> str:
        how = "whole" if width == 1 else f"layers {self.start_layer}-{self.end_layer - 1}"
        return (f"{engine} {how} needs {gib(self.needed_bytes)}, "
                f"has {gib(self.usable_bytes)} usable")


@dataclass(frozen=True)
class Plan:
    """Where each rank of an instance would run, fitting or not."""

    engine: EngineName
    sharding: Sharding
    ranks: tuple[RankFit, ...]

    @property
    def fits(self) -> bool:
        return all(rank.fits for rank in self.ranks)

    @property
    def width(self) -> int:
        return len(self.ranks)


def _pipeline_ranks(card: ModelCard, engine: EngineName,
                    nodes: Sequence[NodeTelemetry]) -> tuple[RankFit, ...]:
    usable = [usable_bytes(n) for n in nodes]
    counts = proportional_layer_counts(card.n_layers, usable)
    ranks = []
    for node, room, (start, end) in zip(nodes, usable, layer_ranges(counts), strict=True):
        share = ShardShare(layers=end - start, weight_numerator=end - start,
                           weight_denominator=card.n_layers,
                           kv_heads=card.num_key_value_heads)
        ranks.append(RankFit(node.node_id, start, end,
                             shard_need_bytes(card, engine, share, node), room))
    return tuple(ranks)


def _tensor_ranks(card: ModelCard, engine: EngineName,
                  nodes: Sequence[NodeTelemetry]) -> tuple[RankFit, ...]:
    width = len(nodes)
    # Every tensor rank holds every layer, 1/width of each weight and of each KV head set.
    share = ShardShare(layers=card.n_layers, weight_numerator=1, weight_denominator=width,
                       kv_heads=card.num_key_value_heads // width)
    return tuple(RankFit(n.node_id, 0, card.n_layers, shard_need_bytes(card, engine, share, n),
                         usable_bytes(n)) for n in nodes)


def plan_for(card: ModelCard, engine: EngineName, sharding: Sharding,
             nodes: Sequence[NodeTelemetry]) -> Plan | str:
    """The plan over `nodes` (in rank order), or why this shape cannot exist at all."""
    width = len(nodes)
    if sharding == "tensor":
        problem = tensor_split_problem(card, width)
        if problem is not None:
            return f"tensor over {width} nodes: {problem}"
        return Plan(engine, sharding, _tensor_ranks(card, engine, nodes))
    problem = pipeline_split_problem(card, width)
    if problem is not None:
        return f"pipeline over {width} nodes: {problem}"
    return Plan(engine, sharding, _pipeline_ranks(card, engine, nodes))
