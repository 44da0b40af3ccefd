"""Where each server's CPU goes per generated token, thread by thread: Skulk (the node and
its runner) against llama-server, one stream, greedy, on the bundled GGUF.

    .venv/bin/python bench/server_threads.py [--threads N] [--alternations 2] [--quick]

Each server is started as `bench/llama_server_compare.py` starts it (same flags; the
servers alternate, `--alternations` times each), warmed up, then streams the four prompts
one after another. Around them every thread of its processes is read from
/proc/<pid>/task/*: CPU time and time waiting for a core (`schedstat`), and voluntary and
involuntary context switches (`status`). Per generated token, the compute threads' CPU
and how often they were preempted, and the CPU of every other thread (Skulk: the node, which
carries HTTP and streams; llama-server: its HTTP threads) are printed and written to
bench/results/server_threads-*.json. CPU per token holds up under load better than
tokens/s (the load shows in the wait column instead). `--quick`: 32 tokens a prompt, one
alternation.
"""

import argparse
import statistics
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.llama_server_build import llama_server  # noqa: E402
from bench.llama_server_compare import (  # noqa: E402
    COUNTS_END_TOKEN,
    PROMPTS,
    llama_cpp_server,
    skulk_server,
    stream,
)
from bench.results import write_result  # noqa: E402

Server = Callable[[], AbstractContextManager[tuple[str, str, dict[str, int]]]]


@dataclass(frozen=True)
class ThreadTimes:
    name: str
    cpu_ns: int
    wait_ns: int
    voluntary: int
    involuntary: int


def read_threads(pid: int) -> dict[str, ThreadTimes]:
    """Every thread of the process now, by thread id (threads that end while read are
    left out)."""
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = dict(line.split(":\t", 1) for line in
                          (task / "status").read_text().splitlines() if ":\t" in line)
            cpu, wait, _ = (int(value) for value in (task / "schedstat").read_text().split())
            threads[task.name] = ThreadTimes(
                (task / "comm").read_text().strip(), cpu, wait,
                int(fields["voluntary_ctxt_switches"]),
                int(fields["nonvoluntary_ctxt_switches"]))
        except (OSError, ValueError, KeyError):
            continue
    return threads


def per_token(before: dict[str, ThreadTimes], after: dict[str, ThreadTimes],
              tokens: int) -> list[dict[str, float | str]]:
    """Each thread that ran, busiest first: ms of CPU and of waiting, and switches, per
    token."""
    rows: list[dict[str, float | str]] = []
    for tid, now in after.items():
        then = before.get(tid, ThreadTimes(now.name, 0, 0, 0, 0))
        if now.cpu_ns > then.cpu_ns:
            rows.append({"thread": f"{now.name}/{tid}",
                         "cpu_ms": (now.cpu_ns - then.cpu_ns) / 1e6 / tokens,
                         "wait_ms": (now.wait_ns - then.wait_ns) / 1e6 / tokens,
                         "voluntary": (now.voluntary - then.voluntary) / tokens,
                         "involuntary": (now.involuntary - then.involuntary) / tokens})
    return sorted(rows, key=lambda row: -float(row["cpu_ms"]))


def measure(name: str, server: Server, max_tokens: int) -> dict[str, float]:
    with server() as (url, model, pids):
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=600)
        stream(client, model, "Say hello.", 8)  # warm up
        before = {process: read_threads(pid) for process, pid in pids.items()}
        # The same prompts for every server (each started fresh: nothing to reuse).
        samples = [stream(client, model, f"({index}) {prompt}",
                          max_tokens, name in COUNTS_END_TOKEN)
                   for index, prompt in enumerate(PROMPTS)]
        after = {process: read_threads(pid) for process, pid in pids.items()}
    tokens = sum(sample.tokens for sample in samples)
    rows = [row | {"process": process} for process in pids
            for row in per_token(before[process], after[process], tokens)]
    # The compute threads: the decoding process's busiest thread and any other of its
    # threads within a quarter of it (the other OpenMP threads). The rest serve.
    compute_process = "runner" if "runner" in pids else "server"
    busiest = next(row for row in rows if row["process"] == compute_process)
    compute = [row for row in rows if row["process"] == compute_process
               and float(row["cpu_ms"]) >= float(busiest["cpu_ms"]) / 4]
    figures = {"decode_tps": statistics.median(sample.decode_tps for sample in samples),
               "compute_cpu_ms": sum(float(row["cpu_ms"]) for row in compute),
               "compute_wait_ms": sum(float(row["wait_ms"]) for row in compute),
               "compute_involuntary": sum(float(row["involuntary"]) for row in compute),
               "serving_cpu_ms": sum(float(row["cpu_ms"]) for row in rows
                                     if row not in compute)}
    print(f"  {name}: " + ", ".join(f"{key} {value:.2f}" for key, value in figures.items()),
          flush=True)
    for row in rows[:8]:
        print(f"      {row['process']:7}{row['thread']:24}cpu {float(row['cpu_ms']):7.3f} ms"
              f"  wait {float(row['wait_ms']):7.3f} ms  switches {float(row['voluntary']):.2f}"
              f" voluntary, {float(row['involuntary']):.2f} involuntary", flush=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="the engines' compute threads (default: every core)")
    parser.add_argument("--alternations", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.alternations, args.max_tokens = 1, 32
    from skulk.testing.models import bundled_gguf

    gguf = bundled_gguf()
    binary = llama_server()
    servers: dict[str, Server] = {
        "skulk": lambda: skulk_server(True, args.threads),
        "llama-server": lambda: llama_cpp_server(binary, gguf, args.threads)}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    for alternation in range(args.alternations):
        order = list(servers) if alternation % 2 == 0 else list(reversed(servers))
        for name in order:
            runs[name].append(measure(name, servers[name], args.max_tokens))
    medians = {name: {key: statistics.median(run[key] for run in results)
                      for key in results[0]} for name, results in runs.items()}
    print("\nmedians per generated token:")
    for name, figures in medians.items():
        print(f"  {name:14}" + "  ".join(f"{key} {value:.3f}" for key, value in figures.items()))
    write_result("server_threads", {"threads": args.threads, "max_tokens": args.max_tokens,
                                    "alternations": args.alternations, "runs": runs,
                                    "medians": medians})
    return 0


if __name__ == "__main__":
    sys.exit(main())
