"""A plan: one engine, one sharding, a node per rank with its layers and its memory fit."""

from collections.abc import Sequence
from dataclasses import dataclass

from skulk.fitting.engines import engine_fit
from skulk.fitting.memory import ShardShare, admits, gib, usable_bytes
from skulk.fitting.offload import capacity_bytes, shard_need
from skulk.master.placement.layers import (
    layer_ranges,
    pipeline_split_problem,
    proportional_layer_counts,
    tensor_split_problem,
)
from skulk.shared.types.ids import NodeId
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry


@dataclass(frozen=True)
class RankFit:
    """One rank of a plan and whether its node admits it: system memory, and GPU memory
    for the layers it offloads (none: the VRAM figures are 0)."""

    node_id: NodeId
    start_layer: int
    end_layer: int
    needed_bytes: int
    usable_bytes: int
    gpu_layers: int = 0
    vram_needed_bytes: int = 0
    vram_usable_bytes: int = 0

    @property
    def fits(self) -> bool:
        gpu_fits = (self.vram_needed_bytes == 0
                    or admits(self.vram_needed_bytes, self.vram_usable_bytes))
        return admits(self.needed_bytes, self.usable_bytes) and gpu_fits

    def shortfall(self, engine: EngineName, width: int) -> str:
        how = "whole" if width == 1 else f"layers {self.start_layer}–{self.end_layer - 1}"
        gpu = (f" with {self.gpu_layers} layers on the GPU ({gib(self.vram_needed_bytes)} "
               f"of {gib(self.vram_usable_bytes)} free)" if self.gpu_layers else "")
        return (f"{engine} {how} needs {gib(self.needed_bytes)}{gpu}, "
                f"has {gib(self.usable_bytes)} usable")


def rank_fit(card: ModelCard, engine: EngineName, share: ShardShare, node: NodeTelemetry,
             start_layer: int, end_layer: int) -> RankFit:
    """The rank holding `share` on `node`, offloading as many layers as its GPUs take."""
    need = shard_need(card, engine, share, node)
    return RankFit(node.node_id, start_layer, end_layer, need.system_bytes, usable_bytes(node),
                   gpu_layers=need.gpu_layers, vram_needed_bytes=need.vram_bytes,
                   vram_usable_bytes=need.vram_usable_bytes)


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
    # Shares follow what each node can give, its GPUs' free memory included.
    counts = proportional_layer_counts(card.n_layers,
                                       [capacity_bytes(n, engine) for n in nodes])
    ranks = []
    for node, (start, end) in zip(nodes, layer_ranges(counts), strict=True):
        share = ShardShare(layers=end - start, weight_numerator=end - start,
                           weight_denominator=card.n_layers,
                           kv_heads=card.num_key_value_heads)
        ranks.append(rank_fit(card, engine, share, node, start, end))
    return tuple(ranks)


def _tensor_ranks(card: ModelCard, engine: EngineName,
                  nodes: Sequence[NodeTelemetry]) -> tuple[RankFit, ...]:
    width = len(nodes)
    # Every tensor rank holds every layer, 1/width of each weight and of each KV head set.
    share = ShardShare(layers=card.n_layers, weight_numerator=1, weight_denominator=width,
                       kv_heads=card.num_key_value_heads // width)
    return tuple(rank_fit(card, engine, share, n, 0, card.n_layers) for n in nodes)


def plan_for(card: ModelCard, engine: EngineName, sharding: Sharding,
             nodes: Sequence[NodeTelemetry]) -> Plan | str:
    """The plan over `nodes` (in rank order), or why this shape cannot exist at all."""
    width = len(nodes)
    refuse_type = engine_fit(engine).split_refusal
    refusal = refuse_type(card.model_type or card.family, sharding, width) if refuse_type \
        else None
    if refusal is not None:
        return f"{engine} over {width} nodes: {refusal}"
    if sharding == "tensor":
        problem = tensor_split_problem(card, width)
        if problem is not None:
            return f"tensor over {width} nodes: {problem}"
        return Plan(engine, sharding, _tensor_ranks(card, engine, nodes))
    problem = pipeline_split_problem(card, width)
    if problem is not None:
        return f"pipeline over {width} nodes: {problem}"
    return Plan(engine, sharding, _pipeline_ranks(card, engine, nodes))
