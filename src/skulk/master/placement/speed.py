"""A plan's predicted decode speed, from what the cluster measured: each node's decode
constants (its MLX kernels' read rate at the model's width and cost per layer, or else its
memory read rate) and each pair's round trip (the reachability prober's edges).

What was not measured is assumed and said so: an MLX node whose kernels were not measured
(yet) reads weights at DECODE_READ_EFFICIENCY of its memory rate with no cost per layer, a
node that predates the memory reading reads memory at ASSUMED_MEMORY_READ_BYTES_PER_SECOND,
a pair with no edge either way has a LAN's round trip, and every link runs at gigabit
Ethernet's rate (the prober times connections, not transfers). llama.cpp's kernels are
not measured: its plans read at DECODE_READ_EFFICIENCY of the memory rate.
"""

from dataclasses import dataclass

from skulk.fitting.engines import engine_fit
from skulk.fitting.speed import (
    Link,
    ModelTraffic,
    RankSpeed,
    decode_read_rate,
    decode_tokens_per_second,
)
from skulk.master.placement.cluster import ClusterView
from skulk.master.placement.plans import Plan
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

DECODE_READ_EFFICIENCY = 0.28
"""Where a node's kernels were not measured: the share of one core's raw memory read rate
(numpy's sum) that a decode step's matrix products reach, 7.3 of 26 GB/s for MLX's fp32
kernels on the bench machine's core at Qwen2.5-0.5B's width (5.1 at Llama-3.2-1B's)."""
ASSUMED_MEMORY_READ_BYTES_PER_SECOND = 10e9
"""A node's read rate when its reading has none (a node that predates the measurement)."""
ASSUMED_ROUND_TRIP_SECONDS = 0.0005
"""A pair's round trip when neither has observed the other: a LAN's."""
LINK_RATE_ASSUMPTION = "gigabit links"
"""Always assumed: the prober times connections, not transfers."""
ACTIVATION_BYTES = 4
"""Bytes per activation on the wire: the fp32 MLX imports (bf16 sends half)."""


@dataclass(frozen=True)
class SpeedPrediction:
    """A plan's predicted decode speed, and which inputs were assumed."""

    tokens_per_second: float
    assumed: tuple[str, ...]

    @property
    def measured(self) -> bool:
        """Whether it rests on measurements (the links' rate aside, never measured)."""
        return all(assumption == LINK_RATE_ASSUMPTION for assumption in self.assumed)

    def describe(self) -> str:
        text = f"~{self.tokens_per_second:.3g} tokens/s for one stream (predicted)"
        return text + (f"; assumed {', '.join(self.assumed)}" if self.assumed else "")


def rank_speed(node: NodeTelemetry, engine: EngineName, width: int
               ) -> tuple[RankSpeed, str | None]:
    """The node's decode constants for `engine` at residual width `width`, and what was
    assumed for them (None: measured)."""
    calibration = node.decode_calibration
    if engine == "mlx" and calibration is not None:
        return RankSpeed(decode_read_rate(calibration.rates(), width),
                         calibration.layer_seconds), None
    measured = node.memory_read_bytes_per_second
    speed = RankSpeed((measured or ASSUMED_MEMORY_READ_BYTES_PER_SECOND)
                      * DECODE_READ_EFFICIENCY)
    if measured is None:
        return speed, f"{node.node_id}'s memory rate"
    return speed, f"{node.node_id}'s MLX kernels" if engine == "mlx" else None


def round_trip(a: NodeTelemetry, b: NodeTelemetry) -> float | None:
    """The best round trip either node observed to the other, in seconds."""
    seen = [address.rtt_ms / 1000 for one, other in ((a, b), (b, a))
            for peer in one.reachability.peers if peer.node_id == other.node_id
            for address in peer.addresses]
    return min(seen) if seen else None


def predict(card: ModelCard, plan: Plan, cluster: ClusterView) -> SpeedPrediction | None:
    """The plan's predicted single-stream decode speed; None when its nodes' readings
    are missing or the card has no weights for its engine."""
    source = card.source_for(engine_fit(plan.engine).weight_format)
    nodes = [cluster.nodes.get(rank.node_id) for rank in plan.ranks]
    if source is None or any(node is None for node in nodes):
        return None
    present = [node for node in nodes if node is not None]
    assumed: list[str] = []
    ranks = []
    for node in present:
        speed, assumption = rank_speed(node, plan.engine, card.hidden_size)
        ranks.append(speed)
        if assumption is not None:
            assumed.append(assumption)
    link = None
    if len(present) > 1:
        trips = [round_trip(a, b) for i, a in enumerate(present) for b in present[i + 1:]]
        if any(trip is None for trip in trips):
            assumed.append("a LAN's round trip where no edge was observed")
        link = Link(max(trip if trip is not None else ASSUMED_ROUND_TRIP_SECONDS
                        for trip in trips))
        assumed.append(LINK_RATE_ASSUMPTION)
    traffic = ModelTraffic(weights_bytes=source.size_bytes, n_layers=card.n_layers,
                           hidden_size=card.hidden_size, activation_bytes=ACTIVATION_BYTES)
    return SpeedPrediction(decode_tokens_per_second(traffic, plan.sharding, ranks, link),
                           tuple(assumed))
