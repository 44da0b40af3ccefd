"""The MLX engine split across simulated machines, beside one node on one core, in one run.

    .venv/bin/python bench/mlx_sharding.py [--tokens 32] [--repeats 3] [--rates 1gbit,200mbit]
                                           [--three]

Each rank is the MLX engine in a process of its own, in its own network namespace (a
host of `skulk.testing.netns`, its outgoing rate capped with `tc tbf`) and pinned
to its own core with `taskset`: as if on separate machines, linked at a LAN's (1 Gbit) or
a Wi-Fi's (200 Mbit) rate. The baseline is one node on one core holding the whole model,
measured first and again last (their mean is the baseline; the two must agree). Every
process runs with the same environment (Debian's OpenBLAS preloaded, one BLAS thread),
greedy, no drafting, no prefix cache. At each rate 2 ranks run twice: plain, and as a full
pipeline (`mlx.pipeline_micro_batches`: overlapped runs, each rank on its own micro-batch).

Reported: single-stream time to first token and decode tokens/s for 2 (and, with
`--three`, 3) ranks; aggregate tokens/s with 1, 4, 8 and 16 concurrent streams (a batch of
up to 16 everywhere); the measured cost of one hop per token (the plain pipeline's time
per token minus one node's), and by arithmetic what a LAN's (0.5 ms) and a Wi-Fi's (5 ms)
round trip would add, since these machines' kernel has no netem to add latency. Three
ranks on a 2-core machine share a core and are labelled oversubscribed.

Whether the figures are a result is measured, not assumed: every process reports the
cores it may run on, its threads, whether OpenBLAS is loaded and with how many threads,
and what share of its core it got; the run measures how much CPU everyone else used
meanwhile (/proc/stat less the bench's own processes), and a hand run (mlx-lm alone,
`taskset -c 0`, outside any namespace) at the start and the end calibrates the one node.
A run on a busy machine prints and records "NOT A RESULT" with the reasons.

Needs root (network namespaces). The model is the bundled SmolLM2 imported for MLX as fp32.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.results import write_result  # noqa: E402
from tests.speculative_support import bundled_mlx_model  # noqa: E402

from skulk.testing.netns import Hosts, missing  # noqa: E402
from skulk.worker.engines.mlx.cpu import runner_environment  # noqa: E402
from skulk.worker.engines.protocol import EngineConfig  # noqa: E402

RANK_SCRIPT = ROOT / "bench" / "mlx_sharding_rank.py"
RING_PORT = 52600
MARK = "BENCH "
RUN_SECONDS = 1800
ROUND_TRIPS_MS = {"LAN": 0.5, "Wi-Fi": 5.0}
N_LAYERS = 30
# 16 goes beyond the question asked (1, 4, 8): a full pipeline splits the batch in one
# micro-batch per rank, and a CPU decodes 4 rows for little less than 8 (the weights are
# read either way), so it pays most once each micro-batch is a full batch.
STREAMS = [1, 4, 8, 16]
MAX_BATCH = 16
# A configuration is measured on a quiet machine when everyone else used less than this
# share of a core meanwhile, and a process alone on its core got at least QUIET_SHARE of it.
QUIET_OTHERS_CORES = 0.15
QUIET_SHARE = 0.9


def cap(hosts: Hosts, rate: str) -> None:
    for host in range(hosts.count):
        hosts.rate(host, None if rate == "off" else rate)


def layer_ranges(ranks: int) -> list[list[int]]:
    bounds = [N_LAYERS * r // ranks for r in range(ranks + 1)]
    return [[bounds[r], bounds[r + 1]] for r in range(ranks)]


def machine_busy_seconds() -> float:
    """CPU seconds every process of the machine has spent so far (from /proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rank_environment(model: Path) -> dict[str, str]:
    """What every process of the bench runs with, the one node included: Debian's OpenBLAS
    preloaded with one thread, as the worker starts an MLX runner with `--threads 1`."""
    return {**os.environ, **runner_environment(EngineConfig(model_path=str(model),
                                                            context_token_limit=2048,
                                                            n_threads=1)),
            "PYTHONUNBUFFERED": "1"}


def run_processes(commands: list[list[str]], env: dict[str, str], log_dir: Path,
                  label: str) -> dict[str, Any]:
    """Run the ranks to their end; rank 0's report, every rank's process facts, and how
    much of the machine the bench's own processes and everyone else used meanwhile."""
    busy, ours, started = machine_busy_seconds(), children_cpu_seconds(), time.monotonic()
    processes = []
    try:
        for rank, command in enumerate(commands):
            log = (log_dir / f"{label}-rank{rank}.log").open("w")
            processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log,
                                              text=True, env=env))
        outputs = [process.communicate(timeout=RUN_SECONDS)[0] for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    wall = time.monotonic() - started
    bench_cpu = children_cpu_seconds() - ours
    reports = [[json.loads(line[len(MARK):]) for line in out.splitlines()
                if line.startswith(MARK)] for out in outputs]
    if processes[0].returncode != 0 or not reports[0]:
        tail = (log_dir / f"{label}-rank0.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{label}: rank 0 exited {processes[0].returncode}:\n{tail}")
    report: dict[str, Any] = reports[0][-1]
    report["processes"] = [r[-1]["process"] for r in reports if r]
    report["others_cores"] = round(max(machine_busy_seconds() - busy - bench_cpu, 0) / wall, 3)
    return report


def run_hand(model: Path, args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    """The issue's hand measurement inside the same run: mlx-lm's whole model decoding
    greedily in a bare process on core 0 (`taskset -c 0`, one BLAS thread, no network
    namespace, no engine). The one-node configuration must match it."""
    spec = {"hand": True, "model": str(model), "tokens": max(args.tokens, 16)}
    return run_processes([["taskset", "-c", "0", sys.executable, str(RANK_SCRIPT),
                           json.dumps(spec)]], rank_environment(model), log_dir, "hand")


def run_configuration(hosts: Hosts, model: Path, cores: list[int],
                      args: argparse.Namespace, log_dir: Path, label: str,
                      full_pipeline: bool = False) -> dict[str, Any]:
    """Start one rank per entry of `cores` (host i on core cores[i]); rank 0's report."""
    ring = [f"10.77.0.{host + 1}:{RING_PORT}" for host in range(len(cores))]
    ranges = layer_ranges(len(cores))
    commands = []
    for rank, core in enumerate(cores):
        spec = {"model": str(model), "rank": rank, "hosts": ring if len(cores) > 1 else
                ["solo"], "layers": ranges[rank], "tokens": args.tokens,
                "repeats": args.repeats, "streams": STREAMS, "max_batch": MAX_BATCH,
                "micro_batches": full_pipeline}
        commands.append(hosts.command(rank, [sys.executable, str(RANK_SCRIPT),
                                             json.dumps(spec)], core=core))
    return run_processes(commands, rank_environment(model), log_dir, label)


def hop_ms(split: dict[str, Any], one: dict[str, Any], hops: int) -> float:
    """Measured cost of one hop per token: the split's time per token beyond one node's."""
    beyond: float = 1000 / split["single"]["decode_tps"] - 1000 / one["single"]["decode_tps"]
    return beyond / hops


def baseline(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """One node, measured first and last: the mean of the two runs of every figure."""
    def mean(a: Any, b: Any) -> Any:
        if isinstance(a, dict):
            return {key: mean(a[key], b[key]) for key in a if key in b}
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            return statistics.mean([a, b])
        return a
    return {key: mean(before[key], after[key]) for key in ("single", *STREAM_KEYS)}


STREAM_KEYS = [f"streams-{n}" for n in STREAMS]


def conditions(hand: list[dict[str, Any]], ones: list[dict[str, Any]],
               runs: dict[str, dict[str, Any]], one: dict[str, Any]) -> dict[str, Any]:
    """Whether the run's figures are a result: nobody else used the machine, the one node
    had its core to itself, and agreed with the hand measurement and with itself."""
    others = {label: report["others_cores"] for label, report in runs.items()}
    one_share = min(one["single"]["cpu_per_wall"] for one in ones)
    drift = abs(ones[0]["single"]["decode_tps"] / ones[1]["single"]["decode_tps"] - 1)
    hand_tps = statistics.mean(h["single"]["decode_tps"] for h in hand)
    against_hand = statistics.mean(o["single"]["decode_tps"] for o in ones) / hand_tps
    problems = [f"others used {value:.2f} of a core during {label}"
                for label, value in others.items() if value > QUIET_OTHERS_CORES]
    if one_share < QUIET_SHARE:
        problems.append(f"the one node got {one_share:.2f} of its core")
    if drift > 0.1:
        problems.append(f"the one node's first and last runs differ by {drift:.0%}")
    if abs(against_hand - 1) > 0.1:
        problems.append(f"the one node decodes at {against_hand:.2f}x the hand run")
    faster = [label for label, report in runs.items() if "ranks" in label
              and report["single"]["decode_tps"] > one["single"]["decode_tps"] * 1.02]
    if faster:
        problems.append("a split decoded one stream faster than one node (a negative hop "
                        f"cost): {', '.join(faster)}")
    return {"quiet": not problems, "problems": problems, "others_cores": others,
            "one_node_core_share": round(one_share, 3), "one_node_drift": round(drift, 3),
            "one_node_vs_hand": round(against_hand, 3),
            "hand_decode_tps": round(hand_tps, 2)}


def print_report(one: dict[str, Any], splits: dict[str, dict[str, Any]],
                 verdict: dict[str, Any]) -> None:
    print("\n| configuration | TTFT | decode tok/s | TTFT ratio | decode ratio |")
    print("|---|---|---|---|---|")
    base = one["single"]
    print(f"| 1 node, 1 core (mean of first and last) | {base['ttft_s'] * 1000:.0f} ms | "
          f"{base['decode_tps']:.1f} | 1.00 | 1.00 |")
    for label, split in splits.items():
        single = split["single"]
        print(f"| {label} | {single['ttft_s'] * 1000:.0f} ms | {single['decode_tps']:.1f} | "
              f"{single['ttft_s'] / base['ttft_s']:.2f} | "
              f"{single['decode_tps'] / base['decode_tps']:.2f} |")
    print("\n| configuration | 1 stream tok/s | 4 streams | 8 streams | 16 streams | "
          "8-stream ratio | 16-stream ratio |")
    print("|---|---|---|---|---|---|---|")
    for label, report in {"1 node, 1 core": one, **splits}.items():
        print(f"| {label} | {report['streams-1']:.1f} | {report['streams-4']:.1f} | "
              f"{report['streams-8']:.1f} | {report['streams-16']:.1f} | "
              f"{report['streams-8'] / one['streams-8']:.2f} | "
              f"{report['streams-16'] / one['streams-16']:.2f} |")
    print("\n| configuration | measured per hop per token | + LAN round trip | + Wi-Fi round "
          "trip (decode tok/s, by arithmetic) |")
    print("|---|---|---|---|")
    for label, split in splits.items():
        if "full pipeline" in label:
            continue
        hops = int(label.split(" ranks")[0].split()[-1]) - 1
        per_hop = hop_ms(split, one, hops)
        per_token = 1000 / split["single"]["decode_tps"]
        projected = [1000 / (per_token + hops * rtt) for rtt in ROUND_TRIPS_MS.values()]
        print(f"| {label} | {per_hop:.2f} ms | {projected[0]:.1f} | {projected[1]:.1f} |")
    print(f"\nhand run (mlx-lm alone, taskset -c 0): {verdict['hand_decode_tps']:.1f} tok/s; "
          f"one node / hand {verdict['one_node_vs_hand']:.2f}; one node got "
          f"{verdict['one_node_core_share']:.2f} of its core; others used "
          f"{max(verdict['others_cores'].values()):.2f} of a core at most")
    if not verdict["quiet"]:
        print("NOT A RESULT, the machine was not quiet: " + "; ".join(verdict["problems"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rates", default="1gbit,200mbit")
    parser.add_argument("--three", action="store_true",
                        help="also 3 ranks (on a 2-core machine two of them share a core)")
    args = parser.parse_args()
    if (reason := missing()) is not None:
        print(f"needs network namespaces: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        model = bundled_mlx_model(Path(os.environ.get("SKULK_BENCH_MODELS",
                                                      Path(scratch) / "models")))
        log_dir = Path(scratch) / "logs"
        log_dir.mkdir()
        cores = os.cpu_count() or 1
        count = 3 if args.three else 2
        runs: dict[str, dict[str, Any]] = {}
        with Hosts(count) as hosts:
            print(f"hand run, then one node on core 0 ({args.tokens} tokens, {args.repeats} "
                  "repeats)", flush=True)
            hand = [run_hand(model, args, log_dir)]
            runs["1 node, first"] = run_configuration(hosts, model, [0], args, log_dir,
                                                      "one")
            splits: dict[str, dict[str, Any]] = {}
            for rate in args.rates.split(","):
                cap(hosts, rate)
                splits[f"{rate}, 2 ranks"] = run_configuration(
                    hosts, model, [0, 1 % cores], args, log_dir, f"{rate}-2")
                splits[f"{rate}, 2 ranks, full pipeline"] = run_configuration(
                    hosts, model, [0, 1 % cores], args, log_dir, f"{rate}-2-full", True)
                if args.three:
                    over = " (oversubscribed: 3 ranks on 2 cores)" if cores < 3 else ""
                    splits[f"{rate}, 3 ranks{over}"] = run_configuration(
                        hosts, model, [0, 1 % cores, 2 % cores], args, log_dir,
                        f"{rate}-3")
                print(f"{rate}: done", flush=True)
            runs["1 node, last"] = run_configuration(hosts, model, [0], args, log_dir,
                                                     "one-last")
            hand.append(run_hand(model, args, log_dir))
        runs.update(splits)
        ones = [runs["1 node, first"], runs["1 node, last"]]
        one = baseline(*ones)
        verdict = conditions(hand, ones, runs, one)
        print_report(one, splits, verdict)
    write_result("mlx_sharding", {"tokens": args.tokens, "repeats": args.repeats,
                                  "conditions": verdict, "hand": hand,
                                  "simulated_machines": {"one_node": one, "runs": runs}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
