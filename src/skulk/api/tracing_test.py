from skulk.api.tracing import RequestTrace, TraceStore, chrome_trace, trace_stats
from skulk.shared.types.ids import CommandId, ModelId, NodeId
from skulk.shared.types.traces import Span


def traced() -> RequestTrace:
    trace = RequestTrace(CommandId("cmd-1"), ModelId("m"), NodeId("api-node"), started_us=1_000)
    trace.span("api.wait_first_chunk", 1_000, 5_000)
    trace.spans += [Span(name="runner.prefill", node_id=NodeId("n1"), rank=0, start_us=2_000,
                         duration_us=2_000),
                    Span(name="runner.decode", node_id=NodeId("n2"), rank=1, start_us=4_000,
                         duration_us=10_000)]
    trace.tokens = 11
    return trace


def test_chrome_trace_has_a_named_process_per_node_and_rank_and_complete_events() -> None:
    events = chrome_trace(traced())["traceEvents"]
    assert isinstance(events, list)
    processes = [e["args"]["name"] for e in events if e["name"] == "process_name"]
    assert processes == ["api-node api", "n1 rank 0", "n2 rank 1"]
    complete = [e for e in events if e["ph"] == "X"]
    assert [(e["name"], e["ts"], e["dur"]) for e in complete] == [
        ("api.wait_first_chunk", 1_000, 4_000), ("runner.prefill", 2_000, 2_000),
        ("runner.decode", 4_000, 10_000)]
    assert len({e["pid"] for e in complete}) == 3


def test_stats_sum_spans_and_derive_decode_speed() -> None:
    stats = trace_stats(traced())
    assert stats["decode_tokens_per_second"] == 1000.0  # 10 tokens after the first in 10 ms
    assert stats["duration_ms"] == 13.0


def test_old_traces_are_dropped_and_capacity_is_bounded() -> None:
    now = [10_000_000]
    store = TraceStore(retention_seconds=5, capacity=2, clock=lambda: now[0])
    for n in range(3):
        store.begin(RequestTrace(CommandId(f"cmd-{n}"), ModelId("m"), NodeId("a"),
                                 started_us=now[0] + n))
    assert [t.trace_id for t in store.all()] == ["cmd-1", "cmd-2"]
    now[0] += 6_000_000
    assert store.all() == [] and store.get(CommandId("cmd-2")) is None


def test_the_api_and_rank_0_on_one_node_are_separate_processes_with_a_thread_per_kind() -> None:
    trace = RequestTrace(CommandId("cmd-2"), ModelId("m"), NodeId("a"), started_us=0)
    trace.span("api.stream", 0, 100)
    trace.spans += [Span(name=name, node_id=NodeId("a"), rank=0, start_us=start,
                         duration_us=10)
                    for name, start in [("runner.decode", 10), ("pipeline.send", 20),
                                        ("pipeline.recv", 40)]]
    events = chrome_trace(trace)["traceEvents"]
    assert isinstance(events, list)
    named = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["name"] == "thread_name"}
    assert sorted(named.values()) == ["api", "pipeline", "runner"]
    pids = {e["name"]: e["pid"] for e in events if e["ph"] == "X"}
    assert pids["api.stream"] != pids["runner.decode"] == pids["pipeline.send"]
    tids = {e["name"]: e["tid"] for e in events if e["ph"] == "X"}
    assert tids["pipeline.send"] == tids["pipeline.recv"] != tids["runner.decode"]


def test_a_trace_ends_once_and_keeps_its_first_outcome() -> None:
    trace = RequestTrace(CommandId("cmd-3"), ModelId("m"), NodeId("a"), started_us=0)
    assert trace.summary()["outcome"] == "running" and not trace.finished
    trace.end("error: cancelled")
    trace.end("abandoned")  # the cleanup that follows every request
    assert trace.finished and trace.summary()["outcome"] == "error: cancelled"
