"""One sample of a node or an instance, as kept in the ring and as sent to peers.

A sample holds what happened in its interval as counts (tokens, generations started,
requests refused, time-to-first-token histogram buckets), not as rates or percentiles,
so samples of several nodes add up exactly: the cluster's p95 is read from the summed
buckets, never averaged from the nodes' own p95s.
"""

from dataclasses import dataclass
from typing import Literal

from skulk.api.metrics import LATENCY_BUCKETS

SAMPLE_INTERVAL_SECONDS = 5.0
WINDOW_SECONDS = 3600.0
RING_CAPACITY = int(WINDOW_SECONDS / SAMPLE_INTERVAL_SECONDS)

MarkerKind = Literal["failover", "eviction", "placement", "join", "leave", "master"]


@dataclass(frozen=True)
class RequestCounts:
    """Requests in one interval: tokens generated, generations started (their first
    chunk), and time-to-first-token counts per bucket of `LATENCY_BUCKETS` (+Inf last)."""

    tokens: float = 0.0
    generations: int = 0
    first_token_buckets: tuple[int, ...] = (0,) * (len(LATENCY_BUCKETS) + 1)

    def as_json(self) -> dict[str, object]:
        return {"tokens": self.tokens, "generations": self.generations,
                "first_token_buckets": list(self.first_token_buckets)}

    def __add__(self, other: "RequestCounts") -> "RequestCounts":
        return RequestCounts(
            tokens=self.tokens + other.tokens, generations=self.generations + other.generations,
            first_token_buckets=tuple(a + b for a, b in zip(
                self.first_token_buckets, other.first_token_buckets, strict=True)))


@dataclass(frozen=True)
class NodeSample:
    """One node over one interval ending at `at` (Unix seconds)."""

    at: float
    seconds: float
    requests: RequestCounts
    refused: int  # requests answered 429 (queue full) or 503 (queue timeout, no room)
    queue_depth: int  # requests this node is streaming now
    cpu_percent: float
    memory_used_bytes: int
    memory_total_bytes: int
    vram_used_bytes: int
    vram_total_bytes: int
    runner_restarts: int  # runners on this node that failed in the interval

    def as_json(self) -> dict[str, object]:
        # Written out (not `dataclasses.asdict`, which deep-copies): a peer sends up to
        # 720 of these at once.
        return {"at": self.at, "seconds": self.seconds, "requests": self.requests.as_json(),
                "refused": self.refused, "queue_depth": self.queue_depth,
                "cpu_percent": self.cpu_percent, "memory_used_bytes": self.memory_used_bytes,
                "memory_total_bytes": self.memory_total_bytes,
                "vram_used_bytes": self.vram_used_bytes,
                "vram_total_bytes": self.vram_total_bytes,
                "runner_restarts": self.runner_restarts}


@dataclass(frozen=True)
class InstanceSample:
    """One instance over one interval, as seen by one node: the requests this node took
    that the instance served, and its queue in the replicated State."""

    at: float
    seconds: float
    instance_id: str
    model_id: str
    requests: RequestCounts
    queue_depth: int

    def as_json(self) -> dict[str, object]:
        return {"at": self.at, "seconds": self.seconds, "instance_id": self.instance_id,
                "model_id": self.model_id, "requests": self.requests.as_json(),
                "queue_depth": self.queue_depth}


@dataclass(frozen=True)
class Marker:
    """Something that happened, to draw on the charts as a vertical line."""

    at: float
    kind: MarkerKind
    text: str
    node_id: str | None = None
    instance_id: str | None = None

    def as_json(self) -> dict[str, object]:
        return {"at": self.at, "kind": self.kind, "text": self.text, "node_id": self.node_id,
                "instance_id": self.instance_id}


def quantile(buckets: tuple[int, ...], q: float) -> float | None:
    """The `q` quantile of a histogram's per-bucket counts, interpolated linearly within
    its bucket as Prometheus's `histogram_quantile` does; None without observations. One
    in the +Inf bucket reads as the last finite bound."""
    total = sum(buckets)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    lower = 0.0
    for upper, count in zip(LATENCY_BUCKETS, buckets, strict=False):
        if count and seen + count >= rank:
            return lower + (upper - lower) * (rank - seen) / count
        seen += count
        lower = upper
    return LATENCY_BUCKETS[-1]
