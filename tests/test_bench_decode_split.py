"""decode_split.py's reading of `perf script`: a token cut at llama.cpp's edges, and who
took the stepping thread's core. The recording itself needs root and perf (not here)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.decode_split import parse, preemptions, split  # noqa: E402

STEP, HELPER, RELAY = 100, 101, 200


def probe(tid: int, at: float, name: str) -> str:
    suffix = "__return" if name.endswith("_ret") else ""
    return f"{tid:6d} [000] {at:.6f}: skulkbench:skulk_{name}{suffix}: (7f00 <- 7f01)"


def switch(at: float, prev: int, state: str, nxt: int, comm: str) -> str:
    return (f"{prev:6d} [001] {at:.6f}: sched:sched_switch: prev_comm=python prev_pid={prev} "
            f"prev_prio=120 prev_state={state} ==> next_comm={comm} next_pid={nxt} next_prio=120")


def token(start: float, graph_us: float = 6000, gap_us: float = 400) -> list[str]:
    """One single-token step starting at `start` (s): 50 µs before the graph, 20 after;
    the PLT's doubled hits on the graph's entry and return."""
    g0 = start + 50e-6
    g1 = g0 + graph_us * 1e-6
    return [probe(STEP, start, "decode"), probe(STEP, g0, "graph"), probe(STEP, g0 + 1e-6, "graph"),
            probe(STEP, g1, "graph_ret"), probe(STEP, g1 + 1e-6, "graph_ret"),
            probe(STEP, g1 + 21e-6, "decode_ret")]


def test_a_step_is_cut_into_llama_cpps_parts_and_the_callers_gap() -> None:
    lines = token(1.0, graph_us=40000)  # a prompt's prefill: not a step
    at = 1.1
    for _ in range(5):
        lines += token(at)
        at += (50 + 6000 + 21 + 400) * 1e-6
    lines += token(at)
    row = split(parse("\n".join(lines)), {STEP, HELPER})
    assert row["steps"] == 5
    assert row["before_us"] == 50
    assert row["graph_us"] == 6001  # the outer of the PLT's doubled hits: first entry, last return
    assert row["after_us"] == 20
    assert row["caller_us"] == 400
    assert row["prefill_ms"] == [40.0]


def test_preemptions_name_the_thread_the_place_and_who_took_the_core() -> None:
    lines = [probe(STEP, 1.0, "graph"),
             switch(1.001, HELPER, "R", RELAY, "skulk-relay"),  # a helper, mid-graph
             switch(1.0012, RELAY, "S", HELPER, "python"),
             probe(STEP, 1.006, "graph_ret"),
             switch(1.0061, STEP, "R", RELAY, "skulk-relay"),  # the stepping thread, in the gap
             switch(1.0066, RELAY, "S", STEP, "python"),
             switch(1.0067, STEP, "S", 0, "swapper/0")]  # slept: not a preemption
    rows = preemptions(parse("\n".join(lines)), {STEP, HELPER})
    assert rows == [
        {"thread": "stepping", "in": "gap", "by": "skulk-relay", "times": 1, "total_ms": 0.5,
         "median_us": 500},
        {"thread": "helper", "in": "graph", "by": "skulk-relay", "times": 1, "total_ms": 0.2,
         "median_us": 200},
    ]


def test_lines_of_other_events_and_other_output_are_skipped() -> None:
    assert parse("garbage\n  12 [000] 1.0: probe_libfoo:bar: (1 <- 2)\n") == []
