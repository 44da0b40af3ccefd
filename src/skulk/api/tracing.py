"""Request traces: spans from the API node and from every rank that served the request,
kept on the node that took the request and exported in Chrome's trace-event format.

Tracing is off until switched on (`POST /v1/tracing`). A trace's id is its request's
command id. Traces older than `retention_seconds` are dropped, and at most `capacity` are
kept. Spans from different machines use each machine's own wall clock.
"""

import statistics
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from skulk.shared.types.ids import CommandId, ModelId, NodeId
from skulk.shared.types.traces import Span

DEFAULT_RETENTION_SECONDS = 3600.0
DEFAULT_CAPACITY = 1000


def now_us() -> int:
    return time.time_ns() // 1000


@dataclass
class RequestTrace:
    trace_id: CommandId
    model_id: ModelId
    node_id: NodeId
    started_us: int = field(default_factory=now_us)
    spans: list[Span] = field(default_factory=list)
    tokens: int = 0
    finished: bool = False
    outcome: str = "running"  # then a finish reason, "error: <kind>" or "abandoned"

    def span(self, name: str, start_us: int, end_us: int | None = None) -> None:
        end = now_us() if end_us is None else end_us
        self.spans.append(Span(name=name, node_id=self.node_id, start_us=start_us,
                               duration_us=max(end - start_us, 0)))

    def end(self, outcome: str) -> None:
        """The first ending counts; later ones (the cleanup after every request) do not."""
        if not self.finished:
            self.finished, self.outcome = True, outcome

    def summary(self) -> dict[str, object]:
        end = max((s.start_us + s.duration_us for s in self.spans), default=self.started_us)
        return {"trace_id": self.trace_id, "model": self.model_id,
                "started_us": self.started_us, "duration_ms": (end - self.started_us) / 1000,
                "spans": len(self.spans), "finished": self.finished,
                "outcome": self.outcome,
                "nodes": sorted({s.node_id for s in self.spans})}


def _process_label(span: Span) -> str:
    if span.name.startswith("api."):
        return f"{span.node_id} api"
    return f"{span.node_id} rank {span.rank}"


def chrome_trace(trace: RequestTrace) -> dict[str, object]:
    """Chrome's trace-event format: one process per node's API and per (node, rank), one
    thread per span category (runner steps, pipeline hops, ...), complete ("X") events."""
    processes: dict[str, int] = {}
    threads: dict[tuple[int, str], int] = {}
    events: list[dict[str, object]] = []
    for span in sorted(trace.spans, key=lambda s: s.start_us):
        label = _process_label(span)
        if label not in processes:
            processes[label] = len(processes) + 1
            events.append({"name": "process_name", "ph": "M", "pid": processes[label],
                           "tid": 0, "args": {"name": label}})
        pid, category = processes[label], span.name.split(".")[0]
        if (pid, category) not in threads:
            threads[(pid, category)] = sum(1 for p, _ in threads if p == pid)
            events.append({"name": "thread_name", "ph": "M", "pid": pid,
                           "tid": threads[(pid, category)], "args": {"name": category}})
        events.append({"name": span.name, "cat": category, "ph": "X",
                       "ts": span.start_us, "dur": span.duration_us,
                       "pid": pid, "tid": threads[(pid, category)],
                       "args": {"node_id": span.node_id, "rank": span.rank}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"trace_id": trace.trace_id, "model": trace.model_id}}


def trace_stats(trace: RequestTrace) -> dict[str, object]:
    by_name: dict[str, list[int]] = {}
    for span in trace.spans:
        by_name.setdefault(span.name, []).append(span.duration_us)
    decode = by_name.get("runner.decode", [])
    decode_ms = sum(decode) / 1000
    return {**trace.summary(), "tokens": trace.tokens,
            "decode_tokens_per_second": (trace.tokens - 1) / (decode_ms / 1000)
            if decode_ms > 0 and trace.tokens > 1 else None,
            "spans_ms": {name: {"count": len(values), "total": sum(values) / 1000,
                                "median": statistics.median(values) / 1000}
                         for name, values in by_name.items()}}


class TraceStore:
    def __init__(self, retention_seconds: float = DEFAULT_RETENTION_SECONDS,
                 capacity: int = DEFAULT_CAPACITY,
                 clock: Callable[[], int] = now_us) -> None:
        self.enabled = False
        self._retention_us = int(retention_seconds * 1_000_000)
        self._capacity = capacity
        self._clock = clock
        self._traces: OrderedDict[CommandId, RequestTrace] = OrderedDict()

    def begin(self, trace: RequestTrace) -> RequestTrace:
        self._prune()
        self._traces[trace.trace_id] = trace
        while len(self._traces) > self._capacity:
            self._traces.popitem(last=False)
        return trace

    def get(self, trace_id: CommandId) -> RequestTrace | None:
        self._prune()
        return self._traces.get(trace_id)

    def all(self) -> list[RequestTrace]:
        self._prune()
        return list(self._traces.values())

    def _prune(self) -> None:
        horizon = self._clock() - self._retention_us
        while self._traces and next(iter(self._traces.values())).started_us < horizon:
            self._traces.popitem(last=False)
