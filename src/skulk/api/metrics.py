"""`GET /metrics` in the Prometheus text format.

Request-path measures (requests by dialect and status, time to first token, time between
chunks, tokens generated) are recorded as requests pass. Node and cluster measures (open
streams, tasks by status, events applied and indexed, elections, runner failures, live
nodes) are read from the node when scraped. Speculative decoding is counted per instance
and drafter from each generation's final usage: tokens drafted and tokens the model kept
(their ratio is the acceptance rate). Batch size is not exported.
"""

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skulk.api.errors import dialect_of
from skulk.shared.types.chunks import Usage
from skulk.shared.types.state import State

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class QueueFill:
    """One instance's unfinished requests against its admission bound."""

    depth: int
    limit: int


@dataclass(frozen=True)
class MachineUse:
    """The machine under the node: CPU time spent busy since boot, over all its CPUs, and
    memory and GPU memory in use."""

    cpu_busy_seconds: float = 0.0
    cpu_count: int = 1
    memory_used_bytes: int = 0
    memory_total_bytes: int = 0
    vram_used_bytes: int = 0
    vram_total_bytes: int = 0


@dataclass(frozen=True)
class NodeCounters:
    """What the node counts, read at scrape time."""

    open_streams: int = 0
    # Of those, the ones whose plain tokens a runner's native relay writes now.
    direct_streams: int = 0
    elections: int = 0
    runner_failures: int = 0
    events_indexed: int = 0  # by this node's master session, 0 when it is not master
    live_nodes: int = 1
    is_master: bool = False
    # Cluster messages this node refused, by (topic, reason).
    dropped_messages: Mapping[tuple[str, str], int] = field(default_factory=dict)
    # The volume under the data dir (the event log, the model store).
    disk_free_bytes: int = 0
    disk_total_bytes: int = 0
    # When this node's TLS certificates stop being valid, Unix seconds, by which
    # (`node`, `ca`); empty on an insecure node.
    certificate_expiry: Mapping[str, float] = field(default_factory=dict)
    # Requests unfinished on each instance, and how many it takes before refusing more.
    instance_queues: Mapping[str, QueueFill] = field(default_factory=dict)
    machine: MachineUse = field(default_factory=MachineUse)


class _NodeCollector(Collector):
    def __init__(self, counters: Callable[[], NodeCounters], state: Callable[[], State]) -> None:
        self._counters = counters
        self._state = state

    def collect(self) -> Iterator[Metric]:
        counters, state = self._counters(), self._state()
        yield GaugeMetricFamily("skulk_open_streams", "Requests this node is streaming now "
                                "(its queue depth)", value=counters.open_streams)
        yield GaugeMetricFamily("skulk_native_streams", "Streams whose tokens a runner's "
                                "native relay writes to the client now, not the node's "
                                "event loop", value=counters.direct_streams)
        tasks = GaugeMetricFamily("skulk_tasks", "Tasks in the cluster State by status",
                                  labels=["status"])
        for status in ("pending", "running", "complete", "failed", "cancelled"):
            tasks.add_metric([status], sum(1 for t in state.tasks.values()
                                           if t.status == status))
        yield tasks
        yield GaugeMetricFamily("skulk_instances", "Model instances placed in the cluster",
                                value=len(state.instances))
        yield GaugeMetricFamily("skulk_events_applied", "Index of the last event this node "
                                "applied", value=state.last_event_applied_idx)
        yield CounterMetricFamily("skulk_events_indexed", "Events indexed by this node's "
                                  "master session", value=counters.events_indexed)
        yield CounterMetricFamily("skulk_elections", "Election rounds this node took part in",
                                  value=counters.elections)
        yield CounterMetricFamily("skulk_runner_failures", "Runners on this node that failed",
                                  value=counters.runner_failures)
        yield GaugeMetricFamily("skulk_live_nodes", "Cluster members this node sees",
                                value=counters.live_nodes)
        yield GaugeMetricFamily("skulk_is_master", "1 on the elected master",
                                value=int(counters.is_master))
        dropped = CounterMetricFamily(
            "skulk_dropped_messages", "Cluster messages this node refused: unsigned, "
            "signed by a non-member, invalid, or claiming another node's origin",
            labels=["topic", "reason"])
        for (topic, reason), count in sorted(counters.dropped_messages.items()):
            dropped.add_metric([topic, reason], count)
        yield dropped
        yield from _machine_families(counters)


def _machine_families(counters: NodeCounters) -> Iterator[Metric]:
    """The machine's CPU and memory, the disk under the event log, certificate expiry,
    and each instance's queue."""
    machine = counters.machine
    yield CounterMetricFamily("skulk_machine_cpu_busy_seconds", "CPU time the machine spent "
                              "busy (not idle or waiting on I/O), summed over its CPUs",
                              value=machine.cpu_busy_seconds)
    yield GaugeMetricFamily("skulk_machine_cpus", "Logical CPUs of the machine",
                            value=machine.cpu_count)
    yield GaugeMetricFamily("skulk_machine_memory_used_bytes", "Memory in use (total less "
                            "available)", value=machine.memory_used_bytes)
    yield GaugeMetricFamily("skulk_machine_memory_total_bytes", "Physical memory",
                            value=machine.memory_total_bytes)
    yield GaugeMetricFamily("skulk_machine_vram_used_bytes", "GPU memory in use, over the "
                            "node's GPUs", value=machine.vram_used_bytes)
    yield GaugeMetricFamily("skulk_machine_vram_total_bytes", "GPU memory, over the node's "
                            "GPUs (0: none, or not known)", value=machine.vram_total_bytes)
    yield GaugeMetricFamily("skulk_disk_free_bytes", "Free space on the volume of the data "
                            "dir (the event log and the model store)",
                            value=counters.disk_free_bytes)
    yield GaugeMetricFamily("skulk_disk_total_bytes", "Size of that volume",
                            value=counters.disk_total_bytes)
    expiry = GaugeMetricFamily("skulk_certificate_expiry_timestamp_seconds",
                               "When this node's TLS certificate (`node`) or the cluster's "
                               "CA certificate (`ca`) expires, Unix seconds",
                               labels=["certificate"])
    for name, at in sorted(counters.certificate_expiry.items()):
        expiry.add_metric([name], at)
    yield expiry
    depth = GaugeMetricFamily("skulk_instance_queue_depth", "Requests unfinished on an "
                              "instance (running and queued)", labels=["instance_id"])
    limit = GaugeMetricFamily("skulk_instance_queue_limit", "Unfinished requests an instance "
                              "takes before new ones are refused (batch + queue bound)",
                              labels=["instance_id"])
    for instance, fill in sorted(counters.instance_queues.items()):
        depth.add_metric([instance], fill.depth)
        limit.add_metric([instance], fill.limit)
    yield depth
    yield limit


class ApiMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("skulk_requests", "HTTP requests by dialect, route and status",
                                ["dialect", "route", "status"], registry=self.registry)
        self.time_to_first_token = Histogram(
            "skulk_time_to_first_token_seconds", "From request to its first generated chunk",
            buckets=LATENCY_BUCKETS, registry=self.registry)
        self.inter_token = Histogram(
            "skulk_inter_token_seconds", "Between consecutive chunks of one generation",
            buckets=LATENCY_BUCKETS, registry=self.registry)
        self.tokens_generated = Counter("skulk_tokens_generated", "Completion tokens served",
                                        registry=self.registry)
        self.native_stream_tokens = Counter(
            "skulk_native_stream_tokens", "Tokens the native relay wrote straight to clients' "
            "sockets (streams on the node that runs their model; --no-native-stream: none)",
            registry=self.registry)
        self.instance_tokens_generated = Counter(
            "skulk_instance_tokens_generated", "Completion tokens served, by the instance that "
            "generated them", ["instance_id"], registry=self.registry)
        self.instance_time_to_first_token = Histogram(
            "skulk_instance_time_to_first_token_seconds", "From request to its first "
            "generated chunk, by the instance that generated it", ["instance_id"],
            buckets=LATENCY_BUCKETS, registry=self.registry)
        self.failovers = Counter(
            "skulk_failovers", "Requests this node moved to another instance mid-stream, by "
            "what failed (runner_failed, timeout, partitioned, pipeline_corrupt)", ["reason"],
            registry=self.registry)
        self.failover_seconds = Histogram(
            "skulk_failover_seconds", "From a request's failure to its next attempt running "
            "(or its final error)", buckets=LATENCY_BUCKETS, registry=self.registry)
        self.drafted_tokens = Counter(
            "skulk_speculative_drafted_tokens", "Tokens proposed by drafters for the model to "
            "verify, by instance and drafter", ["instance_id", "drafter"], registry=self.registry)
        self.accepted_tokens = Counter(
            "skulk_speculative_accepted_tokens", "Drafted tokens the model kept (acceptance "
            "= accepted / drafted), by instance and drafter", ["instance_id", "drafter"],
            registry=self.registry)

    def count_speculation(self, instance: str, usage: Usage) -> None:
        """Add one finished generation's drafted and accepted tokens."""
        if usage.drafted_tokens <= 0:
            return
        drafter = usage.drafter or "unknown"
        self.drafted_tokens.labels(instance, drafter).inc(usage.drafted_tokens)
        self.accepted_tokens.labels(instance, drafter).inc(usage.accepted_tokens)

    def count_tokens(self, instance: str, tokens: int) -> None:
        """Add one finished generation's completion tokens, in all and for its instance."""
        self.tokens_generated.inc(tokens)
        self.instance_tokens_generated.labels(instance).inc(tokens)

    def observe_first_token(self, instance: str, seconds: float) -> None:
        """Record one request's time to its first chunk, in all and for its instance."""
        self.time_to_first_token.observe(seconds)
        self.instance_time_to_first_token.labels(instance).observe(seconds)

    def watch_node(self, counters: Callable[[], NodeCounters],
                   state: Callable[[], State]) -> None:
        self.registry.register(_NodeCollector(counters, state))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class RequestCounter:
    """ASGI middleware: counts every HTTP request by dialect, route template and status."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self._app = app
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        status = [500]

        async def record_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, record_status)
        finally:
            route = scope.get("route")
            # The route's template, not the raw path, so ids do not explode the label set.
            template = getattr(route, "path", None) or "unmatched"
            self._metrics.requests.labels(dialect_of(scope["path"]), template,
                                          str(status[0])).inc()
