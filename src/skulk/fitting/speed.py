"""Predicted single-stream decode speed of a placement: one node, a pipeline over k nodes
or a split by heads over k nodes, from each node's decode constants and each link's round
trip and rate.

A decode step reads every weight once and runs every layer's kernels once, so one node's
step takes the weights' bytes over the rate its matrix products read them at (measured at
the model's width: it is not the memory's raw rate, and it differs between widths) plus a
fixed cost per layer (kernel launches, Python). A pipeline's ranks run one after another:
the step takes the sum of the ranks' shares, plus a hop per rank boundary. A split by
heads runs the ranks at once, each reading 1/k of every layer and of the head but running
every layer: the step takes the slowest rank's share, plus two all-reduces per layer
(after attention, after the MLP). Every split step also makes two fixed collectives (the
ranks' agreement and the sampled tokens). A collective over a ring of k ranks costs (k-1)
round trips and its bytes over the link's rate twice (reduce, then gather); one hop costs
half a round trip and the bytes once.

The figures are what the arithmetic says for an idle machine and an idle link: relative
speeds of candidate splits, checked against measured ones by bench/heads_split.py.
"""

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np

from skulk.shared.types.instances import Sharding

STEP_COLLECTIVES = 2
"""The agreement and the tokens: every split step makes these besides the layers'."""

ASSUMED_LINK_BYTES_PER_SECOND = 1e9 / 8
"""A link's rate when none was measured: gigabit Ethernet."""

DOWN_PROJECTION_SHARE = 0.25
"""The MLP's down projection's share of a model's weights: 26 % of Qwen2.5-0.5B's in
bench/heads_split.py, 25 % of Llama-3.2-1B's."""
MLP_WIDTH_RATIO = 4
"""An MLP's width over the residual's, near enough (Llama-3.2-1B 4, Qwen2.5-0.5B 5.4)."""
MEMORY_PROBE_BYTES = 64 * 2**20
"""The calibration reads this much (several times the caches of a desktop CPU)."""


@dataclass(frozen=True)
class ModelTraffic:
    """What one decode step of one stream moves."""

    weights_bytes: int
    """Every weight, read once per step (the head included)."""
    n_layers: int
    hidden_size: int
    activation_bytes: int = 4
    """Bytes per activation value on the wire (4: fp32, 2: bf16)."""

    @property
    def hidden_state_bytes(self) -> int:
        return self.hidden_size * self.activation_bytes


@dataclass(frozen=True)
class Link:
    """A link between two ranks: its round trip and rate."""

    round_trip_seconds: float
    bytes_per_second: float = ASSUMED_LINK_BYTES_PER_SECOND

    def collective_seconds(self, nbytes: int, ranks: int) -> float:
        """One all-reduce of `nbytes` over a ring of `ranks` linked like this."""
        return (ranks - 1) * (self.round_trip_seconds
                              + 2 * nbytes / ranks / self.bytes_per_second)

    def hop_seconds(self, nbytes: int) -> float:
        """One send of `nbytes` to the next rank."""
        return self.round_trip_seconds / 2 + nbytes / self.bytes_per_second


@dataclass(frozen=True)
class RankSpeed:
    """One rank's decode constants: the rate its matrix products read weights at (for
    the model's width), and what each layer costs beyond that."""

    read_bytes_per_second: float
    layer_seconds: float = 0.0

    def seconds(self, weights_bytes: float, layers: int) -> float:
        """Reading `weights_bytes` and running `layers` layers."""
        return weights_bytes / self.read_bytes_per_second + layers * self.layer_seconds


def step_seconds(traffic: ModelTraffic, sharding: Sharding, ranks: list[RankSpeed],
                 slowest_link: Link | None) -> float:
    """Seconds per decoded token of one stream over `ranks` (one per rank, in order),
    linked no better than `slowest_link`."""
    width = len(ranks)
    if width == 1:
        return ranks[0].seconds(traffic.weights_bytes, traffic.n_layers)
    if slowest_link is None:
        raise ValueError("a split needs the links between its ranks")
    fixed = STEP_COLLECTIVES * slowest_link.collective_seconds(4 * width, width)
    if sharding == "pipeline":
        per_layer = traffic.weights_bytes / traffic.n_layers
        shares = _layer_counts(traffic.n_layers, width)
        compute = sum(rank.seconds(count * per_layer, count)
                      for count, rank in zip(shares, ranks, strict=True))
        hops = (width - 1) * slowest_link.hop_seconds(traffic.hidden_state_bytes)
        return compute + hops + fixed
    compute = max(rank.seconds(traffic.weights_bytes / width, traffic.n_layers)
                  for rank in ranks)
    reduces = 2 * traffic.n_layers * slowest_link.collective_seconds(
        traffic.hidden_state_bytes, width)
    return compute + reduces + fixed


def decode_tokens_per_second(traffic: ModelTraffic, sharding: Sharding,
                             ranks: list[RankSpeed], slowest_link: Link | None) -> float:
    """The prediction itself: tokens per second of one stream."""
    return 1.0 / step_seconds(traffic, sharding, ranks, slowest_link)


def rate_at_width(rates: Mapping[int, float], width: int) -> float:
    """The read rate at residual width `width`, from rates measured at some widths: the
    width's own when measured, else the nearest (by ratio) of the widths sharing its
    power-of-two factor (rows whose length is a multiple of a large power of two read
    slower), else the nearest of all."""
    if not rates:
        raise ValueError("no measured rates to read a width's from")
    if width in rates:
        return rates[width]
    alike = [w for w in rates if _alignment(w) == _alignment(width)]
    nearest = min(alike or rates, key=lambda w: (abs(math.log(w / width)), w))
    return rates[nearest]


def decode_read_rate(rates: Mapping[int, float], hidden_size: int) -> float:
    """The rate a decode step reads a model's weights at: most of them in rows of the
    residual width, the MLP's down projection (DOWN_PROJECTION_SHARE of the bytes) in
    rows of the intermediate width, taken as MLP_WIDTH_RATIO times the residual."""
    seconds_per_byte = ((1 - DOWN_PROJECTION_SHARE) / rate_at_width(rates, hidden_size)
                        + DOWN_PROJECTION_SHARE
                        / rate_at_width(rates, MLP_WIDTH_RATIO * hidden_size))
    return 1 / seconds_per_byte


def _alignment(width: int) -> int:
    """The power-of-two factor of a width, counted up to 1024 (beyond, all alike)."""
    return min((width & -width).bit_length() - 1, 10)


def _layer_counts(n_layers: int, ranks: int) -> list[int]:
    bounds = [n_layers * r // ranks for r in range(ranks + 1)]
    return [bounds[r + 1] - bounds[r] for r in range(ranks)]


@cache
def memory_read_bytes_per_second() -> float:
    """This machine's memory read rate for one core, measured once per process: the best
    of a few passes summing a buffer larger than the caches (numpy's reduction runs on
    one thread, as a runner's decode with one BLAS thread reads its weights)."""
    buffer = np.ones(MEMORY_PROBE_BYTES // 4, dtype=np.float32)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        float(buffer.sum())
        best = min(best, time.perf_counter() - started)
    return MEMORY_PROBE_BYTES / best
