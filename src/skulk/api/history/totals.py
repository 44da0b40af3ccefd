"""What the node's own Prometheus counters have counted so far, read without a scrape:
tokens, generations and time-to-first-token buckets (in all and per instance), and
requests refused. The history keeps the difference between two readings."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import Metric

from skulk.api.history.samples import RequestCounts
from skulk.api.metrics import LATENCY_BUCKETS, ApiMetrics

# Refusals: 429 when every queue is full, 503 when a request waited past the queue deadline
# (or no instance could be made ready, or no quorum).
REFUSED_STATUSES = frozenset({"429", "503"})


@dataclass(frozen=True)
class CounterTotals:
    """Cumulative counts since the node started."""

    requests: RequestCounts = RequestCounts()
    refused: int = 0
    instances: Mapping[str, RequestCounts] = field(default_factory=dict)


def difference(later: RequestCounts, earlier: RequestCounts) -> RequestCounts:
    return RequestCounts(
        tokens=later.tokens - earlier.tokens, generations=later.generations - earlier.generations,
        first_token_buckets=tuple(a - b for a, b in zip(
            later.first_token_buckets, earlier.first_token_buckets, strict=True)))


def _buckets(cumulative: Mapping[str, float]) -> tuple[int, ...]:
    """Per-bucket counts from Prometheus's cumulative `le` counts."""
    bounds = [*(str(float(b)) for b in LATENCY_BUCKETS), "+Inf"]
    running = [int(cumulative.get(bound, 0)) for bound in bounds]
    return tuple(count - (running[i - 1] if i else 0) for i, count in enumerate(running))


def _histograms(families: Iterable[Metric], label: str | None) -> dict[str, tuple[int, ...]]:
    """Per-bucket counts by the value of `label` (one entry, "", when None)."""
    cumulative: dict[str, dict[str, float]] = {}
    for family in families:
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                key = sample.labels.get(label, "") if label else ""
                cumulative.setdefault(key, {})[sample.labels["le"]] = sample.value
    return {key: _buckets(counts) for key, counts in cumulative.items()}


def _counter(families: Iterable[Metric], label: str | None) -> dict[str, float]:
    values: dict[str, float] = {}
    for family in families:
        for sample in family.samples:
            if sample.name.endswith("_total"):
                key = sample.labels.get(label, "") if label else ""
                values[key] = values.get(key, 0.0) + sample.value
    return values


def _counts(tokens: float, buckets: tuple[int, ...] | None) -> RequestCounts:
    if buckets is None:
        return RequestCounts(tokens=tokens)
    return RequestCounts(tokens=tokens, generations=sum(buckets), first_token_buckets=buckets)


def read_totals(metrics: ApiMetrics) -> CounterTotals:
    """The counters now."""
    tokens = _counter(metrics.tokens_generated.collect(), None).get("", 0.0)
    first_tokens = _histograms(metrics.time_to_first_token.collect(), None).get("")
    instance_tokens = _counter(metrics.instance_tokens_generated.collect(), "instance_id")
    instance_first = _histograms(metrics.instance_time_to_first_token.collect(),
                                 "instance_id")
    refused = sum(
        int(sample.value) for family in metrics.requests.collect() for sample in family.samples
        if sample.name.endswith("_total") and sample.labels.get("status") in REFUSED_STATUSES)
    return CounterTotals(
        requests=_counts(tokens, first_tokens), refused=refused,
        instances={instance: _counts(instance_tokens.get(instance, 0.0),
                                     instance_first.get(instance))
                   for instance in sorted(set(instance_tokens) | set(instance_first))})
