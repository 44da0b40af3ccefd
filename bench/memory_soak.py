"""A node's memory over thousands of requests: does serving leak?

    .venv/bin/python bench/memory_soak.py [--windows 8] [--per-window 800] [--tokens 1 8]

About 7 minutes with the defaults on a 2-core machine.

One node serving the bundled GGUF (`skulk run --serve`, started as bench/server_turns.py
starts it for the llama-server comparison), fed streamed chat requests one after another
by the `openai` client, every prompt unique, answers of each `--tokens` length in turn.
After each window of `--per-window` requests and a 2 s settle, the resident memory (RSS)
of the node and of its runner is read. The first window is the warm-up, the baseline:
what a node holds once it has served. Reported per process: RSS after each window, and
the growth after the warm-up as MiB per 1,000 requests (the least-squares slope over the
windows), beside the baseline as a ratio (last RSS / RSS after the warm-up).

A node keeps a few per-request tables that are bounded, and they fill during the first
few thousand requests: the data plane's ranks of the last 1,024 requests, the master's
last 10,000 commands seen (two a request: the generation and its `TaskFinished`), the
event log's record offsets until its compaction every 10,000 events (2-5 events a
request: requests one after another index 2-3). So a run of fewer than ~5,000 requests
reads their filling as growth (the default is 8 windows of 800); a leak keeps the slope
up window after window, past them.
"""

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import openai  # noqa: E402
from bench.llama_server_compare import stream  # noqa: E402
from bench.results import write_result  # noqa: E402
from bench.server_turns import skulk_server  # noqa: E402

SETTLE_SECONDS = 2.0


def rss_mib(pid: int) -> float:
    """A process's resident memory, MiB (from /proc: Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of ys over xs (0 for fewer than two points)."""
    if len(xs) < 2:
        return 0.0
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def growth(requests: Sequence[int], rss: Sequence[float]) -> dict[str, float]:
    """A process's memory after the warm-up window (the first): MiB per 1,000 requests
    over the windows, and the last window's RSS against the warm-up's."""
    return {"baseline_mib": round(rss[0], 1), "last_mib": round(rss[-1], 1),
            "mib_per_1000_requests": round(1000 * slope(requests, rss), 3),
            "last_over_baseline": round(rss[-1] / rss[0], 4)}


def soak(windows: int, per_window: int, tokens: Sequence[int]) -> dict[str, Any]:
    lengths = itertools.cycle(tokens)
    served = 0
    table: dict[str, list[float]] = {"node": [], "runner": []}
    after: list[int] = []
    with skulk_server(True) as (url, model, pids):
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
        started = time.monotonic()
        for window in range(windows):
            for _ in range(per_window):
                stream(client, model, f"({served}) Say hello.", next(lengths))
                served += 1
            time.sleep(SETTLE_SECONDS)
            after.append(served)
            for name in table:
                table[name].append(rss_mib(pids[name]))
            print(f"  window {window}: {served} requests, {time.monotonic() - started:.0f} s, "
                  + ", ".join(f"{name} {values[-1]:.1f} MiB" for name, values in table.items()),
                  flush=True)
    return {"windows": windows, "per_window": per_window, "tokens": list(tokens),
            "requests_after_window": after,
            "rss_mib": {name: [round(value, 1) for value in values]
                        for name, values in table.items()},
            "growth": {name: growth(after, values) for name, values in table.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=8,
                        help="windows of requests, the first the warm-up (default 8)")
    parser.add_argument("--per-window", type=int, default=800)
    parser.add_argument("--tokens", type=int, nargs="+", default=[1, 8],
                        help="answer lengths, taken in turn (default 1 and 8)")
    args = parser.parse_args()
    if args.windows < 2 or args.per_window < 1:
        parser.error("give at least 2 windows of at least 1 request")
    results = soak(args.windows, args.per_window, args.tokens)
    for name, figures in results["growth"].items():
        print(f"{name}: {figures['baseline_mib']} MiB after the warm-up, "
              f"{figures['last_mib']} MiB at the end ({figures['last_over_baseline']}x), "
              f"{figures['mib_per_1000_requests']} MiB per 1,000 requests after it")
    write_result("memory_soak", results,
                 "bench/memory_soak.py: one node, streamed requests one after another, RSS "
                 "after each window; the first window is the warm-up and the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
