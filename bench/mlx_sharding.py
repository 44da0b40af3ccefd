"""The MLX engine split across simulated machines, beside one node on one core, in one run.

    .venv/bin/python bench/mlx_sharding.py [--tokens 32] [--repeats 3] [--rates 1gbit,200mbit]
                                           [--micro-batches] [--three]

Each rank is the MLX engine in a process of its own, in its own network namespace (a
host of `../shared/tools/netns-hosts`, its outgoing rate capped with `tc tbf`) and pinned
to its own core with `taskset`: as if on separate machines, linked at a LAN's (1 Gbit) or
a Wi-Fi's (200 Mbit) rate. The baseline is one node on one core holding the whole model.
Everything runs with one BLAS thread, greedy, no drafting, no prefix cache.

With `--micro-batches`, 2 ranks run a second time with `mlx.pipeline_micro_batches` on
(each decode step in one micro-batch per rank). Reported: single-stream time to first
token and decode tokens/s for 2 (and, with `--three`, 3) ranks; aggregate tokens/s with
1, 4 and 8 concurrent streams; the measured cost of one hop per token (the pipeline's
time per token minus one node's), and by arithmetic what a LAN's (0.5 ms) and a Wi-Fi's
(5 ms) round trip would add, since these machines' kernel has no netem to add latency.
Three ranks on a 2-core machine share a core and are labelled oversubscribed.

Needs root (network namespaces). The model is the bundled SmolLM2 imported for MLX as fp32.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.results import write_result  # noqa: E402
from tests.speculative_support import bundled_mlx_model  # noqa: E402

from skulk.worker.engines.mlx.cpu import runner_environment  # noqa: E402
from skulk.worker.engines.protocol import EngineConfig  # noqa: E402

NETNS_HOSTS = ROOT.parent / "shared" / "tools" / "netns-hosts"
RANK_SCRIPT = ROOT / "bench" / "mlx_sharding_rank.py"
PREFIX = f"bm{os.getpid() % 10000}"
RING_PORT = 52600
MARK = "BENCH "
RUN_SECONDS = 1800
ROUND_TRIPS_MS = {"LAN": 0.5, "Wi-Fi": 5.0}
N_LAYERS = 30


@contextmanager
def hosts(count: int) -> Iterator[None]:
    subprocess.run([str(NETNS_HOSTS), "up", str(count), PREFIX], check=True)
    try:
        yield
    finally:
        subprocess.run([str(NETNS_HOSTS), "down", PREFIX], check=False)


def cap(count: int, rate: str) -> None:
    for host in range(count):
        subprocess.run([str(NETNS_HOSTS), "link", str(host), rate, PREFIX], check=True)


def layer_ranges(ranks: int) -> list[list[int]]:
    bounds = [N_LAYERS * r // ranks for r in range(ranks + 1)]
    return [[bounds[r], bounds[r + 1]] for r in range(ranks)]


def run_configuration(model: Path, cores: list[int], args: argparse.Namespace,
                      log_dir: Path, label: str, micro_batches: bool = False
                      ) -> dict[str, Any]:
    """Start one rank per entry of `cores` (host i on core cores[i]); rank 0's report."""
    ring = [f"10.77.0.{host + 1}:{RING_PORT}" for host in range(len(cores))]
    ranges = layer_ranges(len(cores))
    env = {**os.environ, **runner_environment(EngineConfig(model_path=str(model),
                                                           context_token_limit=2048,
                                                           n_threads=1)),
           "PYTHONUNBUFFERED": "1"}
    processes = []
    try:
        for rank, core in enumerate(cores):
            spec = {"model": str(model), "rank": rank, "hosts": ring if len(cores) > 1 else
                    ["solo"], "layers": ranges[rank], "tokens": args.tokens,
                    "repeats": args.repeats, "streams": [1, 4, 8],
                    "micro_batches": micro_batches}
            log = (log_dir / f"{label}-rank{rank}.log").open("w")
            processes.append(subprocess.Popen(
                ["ip", "netns", "exec", f"{PREFIX}-n{rank}", "taskset", "-c", str(core),
                 sys.executable, str(RANK_SCRIPT), json.dumps(spec)],
                stdout=subprocess.PIPE if rank == 0 else log, stderr=log, text=True, env=env))
        stdout, _ = processes[0].communicate(timeout=RUN_SECONDS)
        for process in processes[1:]:
            process.wait(timeout=60)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    lines = [line for line in stdout.splitlines() if line.startswith(MARK)]
    if processes[0].returncode != 0 or not lines:
        tail = (log_dir / f"{label}-rank0.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{label}: rank 0 exited {processes[0].returncode}:\n{tail}")
    report: dict[str, Any] = json.loads(lines[-1][len(MARK):])
    return report


def hop_ms(split: dict[str, Any], one: dict[str, Any], hops: int) -> float:
    """Measured cost of one hop per token: the split's time per token beyond one node's."""
    beyond: float = 1000 / split["single"]["decode_tps"] - 1000 / one["single"]["decode_tps"]
    return beyond / hops


def print_report(one: dict[str, Any], splits: dict[str, dict[str, Any]]) -> None:
    print("\n| configuration | TTFT | decode tok/s | TTFT ratio | decode ratio |")
    print("|---|---|---|---|---|")
    base = one["single"]
    print(f"| 1 node, 1 core | {base['ttft_s'] * 1000:.0f} ms | {base['decode_tps']:.1f} "
          "| 1.00 | 1.00 |")
    for label, split in splits.items():
        single = split["single"]
        print(f"| {label} | {single['ttft_s'] * 1000:.0f} ms | {single['decode_tps']:.1f} | "
              f"{single['ttft_s'] / base['ttft_s']:.2f} | "
              f"{single['decode_tps'] / base['decode_tps']:.2f} |")
    print("\n| configuration | 1 stream tok/s | 4 streams | 8 streams | 8-stream ratio |")
    print("|---|---|---|---|---|")
    rows = {"1 node, 1 core": one, **splits}
    for label, report in rows.items():
        print(f"| {label} | {report['streams-1']:.1f} | {report['streams-4']:.1f} | "
              f"{report['streams-8']:.1f} | {report['streams-8'] / one['streams-8']:.2f} |")
    print("\n| configuration | measured per hop per token | + LAN round trip | + Wi-Fi round "
          "trip (decode tok/s, by arithmetic) |")
    print("|---|---|---|---|")
    for label, split in splits.items():
        hops = int(label.split(" ranks")[0].split()[-1]) - 1
        per_hop = hop_ms(split, one, hops)
        per_token = 1000 / split["single"]["decode_tps"]
        projected = [1000 / (per_token + hops * rtt) for rtt in ROUND_TRIPS_MS.values()]
        print(f"| {label} | {per_hop:.2f} ms | {projected[0]:.1f} | {projected[1]:.1f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rates", default="1gbit,200mbit")
    parser.add_argument("--micro-batches", action="store_true",
                        help="also 2 ranks with mlx.pipeline_micro_batches on")
    parser.add_argument("--three", action="store_true",
                        help="also 3 ranks (on a 2-core machine two of them share a core)")
    args = parser.parse_args()
    if os.geteuid() != 0 or not NETNS_HOSTS.exists():
        print("needs root and ../shared/tools/netns-hosts", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        model = bundled_mlx_model(Path(os.environ.get("SKULK_BENCH_MODELS",
                                                      Path(scratch) / "models")))
        log_dir = Path(scratch) / "logs"
        log_dir.mkdir()
        cores = os.cpu_count() or 1
        count = 3 if args.three else 2
        with hosts(count):
            print(f"one node on core 0 ({args.tokens} tokens, {args.repeats} repeats)",
                  flush=True)
            one = run_configuration(model, [0], args, log_dir, "one")
            splits: dict[str, dict[str, Any]] = {}
            for rate in args.rates.split(","):
                cap(count, rate)
                splits[f"{rate}, 2 ranks"] = run_configuration(
                    model, [0, 1 % cores], args, log_dir, f"{rate}-2")
                if args.micro_batches:
                    splits[f"{rate}, 2 ranks, micro-batched"] = run_configuration(
                        model, [0, 1 % cores], args, log_dir, f"{rate}-2-micro", True)
                if args.three:
                    over = " (oversubscribed: 3 ranks on 2 cores)" if cores < 3 else ""
                    splits[f"{rate}, 3 ranks{over}"] = run_configuration(
                        model, [0, 1 % cores, 2 % cores], args, log_dir, f"{rate}-3")
                print(f"{rate}: done", flush=True)
        print_report(one, splits)
    write_result("mlx_sharding", {"tokens": args.tokens, "repeats": args.repeats,
                                  "simulated_machines": {"one_node": one, "splits": splits}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
