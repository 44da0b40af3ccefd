"""Samples into chart series: columns of rates and gauges over time slots, per node, per
instance (summed over the nodes that took its requests) and for the whole cluster.

A time slot is a sample's end rounded to the interval, so nodes that sample out of phase
meet in one slot. Columns, not rows: one list of times and one list per measure, which is
what chart libraries draw from without copying.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from skulk.api.history.samples import (
    SAMPLE_INTERVAL_SECONDS,
    InstanceSample,
    NodeSample,
    RequestCounts,
    quantile,
)
from skulk.shared.types.ids import NodeId

Series = dict[str, list[float | None]]
T = TypeVar("T")


def slot_of(at: float, interval: float = SAMPLE_INTERVAL_SECONDS) -> float:
    return round(at / interval) * interval


def _request_columns(counts: Sequence[tuple[RequestCounts, float]]) -> Series:
    """Rates and time-to-first-token percentiles of (counts, seconds) pairs, one a slot."""
    return {
        "decode_tokens_per_second": [c.tokens / s for c, s in counts],
        "requests_per_second": [c.generations / s for c, s in counts],
        "ttft_p50_seconds": [quantile(c.first_token_buckets, 0.5) for c, _ in counts],
        "ttft_p95_seconds": [quantile(c.first_token_buckets, 0.95) for c, _ in counts],
    }


def node_series(samples: Sequence[NodeSample]) -> Series:
    """One node's series, a point per sample."""
    return {"t": [slot_of(s.at) for s in samples],
            **_request_columns([(s.requests, s.seconds) for s in samples]),
            **_node_gauges(samples)}


def _node_gauges(samples: Sequence[NodeSample]) -> Series:
    return {
        "queue_depth": [float(s.queue_depth) for s in samples],
        "admissions_refused_per_second": [s.refused / s.seconds for s in samples],
        "cpu_percent": [s.cpu_percent for s in samples],
        "memory_used_bytes": [float(s.memory_used_bytes) for s in samples],
        "vram_used_bytes": [float(s.vram_used_bytes) for s in samples],
        "runner_restarts": [float(s.runner_restarts) for s in samples],
    }


@dataclass(frozen=True)
class _Slot:
    """Samples of several nodes in one slot, added up (the CPU as a mean)."""

    requests: RequestCounts
    rate_seconds: float  # the mean interval, so a sum of counts reads as a sum of rates
    refused: float
    queue_depth: int
    cpu_percent: float
    memory_used_bytes: int
    vram_used_bytes: int
    runner_restarts: int


def _by_slot(samples: Iterable[T], at: Callable[[T], float]) -> dict[float, list[T]]:
    slots: dict[float, list[T]] = {}
    for sample in samples:
        slots.setdefault(slot_of(at(sample)), []).append(sample)
    return dict(sorted(slots.items()))


def _sum_counts(counts: Sequence[RequestCounts]) -> RequestCounts:
    """The counts added up (column sums: a slot of a 200-node cluster adds 200)."""
    if not counts:
        return RequestCounts()
    return RequestCounts(
        tokens=sum(c.tokens for c in counts), generations=sum(c.generations for c in counts),
        first_token_buckets=tuple(map(sum, zip(*(c.first_token_buckets for c in counts),
                                               strict=True))))


def cluster_series(by_node: Mapping[NodeId, Sequence[NodeSample]]) -> Series:
    """The cluster's series: counts and gauges summed over the nodes in each slot, CPU
    averaged."""
    slots = _by_slot((s for samples in by_node.values() for s in samples), lambda s: s.at)
    merged = [_Slot(
        requests=_sum_counts([s.requests for s in group]),
        rate_seconds=sum(s.seconds for s in group) / len(group),
        refused=sum(s.refused / s.seconds for s in group),
        queue_depth=sum(s.queue_depth for s in group),
        cpu_percent=sum(s.cpu_percent for s in group) / len(group),
        memory_used_bytes=sum(s.memory_used_bytes for s in group),
        vram_used_bytes=sum(s.vram_used_bytes for s in group),
        runner_restarts=sum(s.runner_restarts for s in group)) for group in slots.values()]
    return {"t": list(slots),
            **_request_columns([(m.requests, m.rate_seconds) for m in merged]),
            "queue_depth": [float(m.queue_depth) for m in merged],
            "admissions_refused_per_second": [m.refused for m in merged],
            "cpu_percent": [m.cpu_percent for m in merged],
            "memory_used_bytes": [float(m.memory_used_bytes) for m in merged],
            "vram_used_bytes": [float(m.vram_used_bytes) for m in merged],
            "runner_restarts": [float(m.runner_restarts) for m in merged],
            "nodes_reporting": [float(len(group)) for group in slots.values()]}


def instance_series(samples: Iterable[InstanceSample]) -> dict[str, tuple[str, Series]]:
    """Each instance's (model, series): the requests every node took for it summed, its
    queue (the same State on every node) the largest any node saw."""
    by_instance: dict[str, list[InstanceSample]] = {}
    for sample in samples:
        by_instance.setdefault(sample.instance_id, []).append(sample)
    result: dict[str, tuple[str, Series]] = {}
    for instance_id, rows in sorted(by_instance.items()):
        slots = _by_slot(rows, lambda s: s.at)
        counts = [(_sum_counts([s.requests for s in group]),
                   sum(s.seconds for s in group) / len(group)) for group in slots.values()]
        model_id = next((s.model_id for s in reversed(rows) if s.model_id), "")
        result[instance_id] = (model_id, {
            "t": list(slots), **_request_columns(counts),
            "queue_depth": [float(max(s.queue_depth for s in group))
                            for group in slots.values()]})
    return result
