"""Where a split MLX instance's time per token goes: a timeline of every decode step.

    SKULK_BENCH_MODELS=/tmp/skulk-bench-models nice -n 15 \
        .venv/bin/python bench/mlx_step_timeline.py [--tokens 24] [--repeats 2] [--ranks 1,2]

Each configuration runs the engine as bench/mlx_sharding_rank.py does (the bundled SmolLM2
as fp32 MLX, one BLAS thread, one stream), its ranks on 127.0.0.1 pinned to cores 0, 1
(`taskset`), no network namespace. Each rank marks the monotonic clock and its CPU time
around the loop's step, its collectives, the ring's send and receive, the corruption
guard's checks and sampling (patched in here, from outside the engine), and the driver
lines both ranks' marks up per step: the median and minimum of each stretch of the
critical path, and each rank's CPU time per token. On a busy machine read the minima and
the CPU times: medians are contention. The figures in bench/README.md came from this.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.mlx_sharding import layer_ranges, rank_environment  # noqa: E402
from tests.speculative_support import bundled_mlx_model  # noqa: E402

MARK = "TIMELINE "
PORT = 52900
Event = tuple[str, int, int]  # name, monotonic ns, process CPU ns


def instrument(events: list[Event]) -> None:
    """Mark entry (`name>`) and exit (`name<`) of the calls a decode step is made of."""
    from skulk.worker.engines.mlx import collectives, corruption_guard, generation_loop
    from skulk.worker.engines.mlx.families import pipeline
    from skulk.worker.engines.mlx.shard import WholeModelShard

    def around(owner: Any, attribute: str, name: str) -> None:
        inner: Callable[..., Any] = getattr(owner, attribute)

        def marked(*args: Any, **kwargs: Any) -> Any:
            events.append((name + ">", time.perf_counter_ns(), time.process_time_ns()))
            try:
                return inner(*args, **kwargs)
            finally:
                events.append((name + "<", time.perf_counter_ns(), time.process_time_ns()))
        setattr(owner, attribute, marked)

    loop, ring = generation_loop.GenerationLoop, collectives.RingGroup
    for owner, attribute, name in [
            (loop, "step", "step"), (loop, "_agree_control", "agree"),
            (generation_loop, "sample_rows", "sample"), (corruption_guard, "finite", "check"),
            (ring, "all_sum", "all_sum"), (ring, "send", "send"), (ring, "recv", "recv"),
            (ring, "receive_and_run", "recv"), (pipeline.PipelineShard, "forward", "forward"),
            (WholeModelShard, "forward", "forward")]:
        around(owner, attribute, name)


def run_rank(spec: dict[str, Any]) -> None:
    """One rank: the bench's engine, one stream per repeat, its marks on stdout."""
    from bench import mlx_sharding_rank

    events: list[Event] = []
    instrument(events)
    engine_batch = mlx_sharding_rank.run_batch

    def batch(engine: Any, name: str, streams: int, tokens: int) -> dict[str, Any]:
        events.clear()
        result = engine_batch(engine, name, streams, tokens)
        print(MARK + json.dumps({"rank": spec["rank"], "run": name, "events": events}),
              flush=True)
        return result

    mlx_sharding_rank.run_batch = batch
    sys.argv = [sys.argv[0], json.dumps(spec)]
    mlx_sharding_rank.main()


def decode_steps(events: list[Event]) -> list[list[Event]]:
    """The steps that ran a forward pass, each its list of marks."""
    steps: list[list[Event]] = []
    current: list[Event] = []
    for event in events:
        current.append(event)
        if event[0] == "step<":
            if any(name == "forward>" for name, _, _ in current):
                steps.append(current)
            current = []
    return steps


def at(step: list[Event], name: str, nth: int = 0, cpu: bool = False) -> int | None:
    hits = [(wall, used) for mark, wall, used in step if mark == name]
    if len(hits) <= nth:
        return None
    return hits[nth][1] if cpu else hits[nth][0]


def stretches(ranks: dict[int, list[list[Event]]]) -> dict[str, list[float]]:
    """Milliseconds of each stretch of the critical path, per decode step (the first two
    steps, with the prompt, and the last are left out)."""
    found: dict[str, list[float]] = defaultdict(list)

    def add(name: str, start: int | None, end: int | None) -> None:
        if start is not None and end is not None:
            found[name].append((end - start) / 1e6)

    count = min(len(steps) for steps in ranks.values())
    for index in range(2, count - 1):
        first, following = ranks[0][index], ranks[0][index + 1]
        add("token, wall", at(first, "step>"), at(following, "step>"))
        for rank, steps in ranks.items():
            add(f"rank {rank} CPU per token", at(steps[index], "step>", cpu=True),
                at(steps[index + 1], "step>", cpu=True))
        if len(ranks) == 1:
            add("graph building", at(first, "forward>"), at(first, "forward<"))
            continue
        last = ranks[len(ranks) - 1][index]
        tokens_sum = sum(1 for name, _, _ in first if name == "all_sum>") - 1
        add("rank 0: agreement", at(first, "step>"), at(first, "forward>"))
        add("rank 0: graph building", at(first, "forward>"), at(first, "send>"))
        add("rank 0: compute and send", at(first, "send>"), at(first, "send<"))
        add("hop and last rank's layers", at(first, "send<"), at(last, "check>"))
        add("last rank: head and check", at(last, "check>"), at(last, "check<"))
        add("tokens back to rank 0", at(last, "all_sum>", tokens_sum),
            at(first, "all_sum<", tokens_sum))
        found["collectives per step"].append(tokens_sum + 1)
    return found


def run_configuration(model: Path, ranks: int, args: argparse.Namespace, port: int) -> None:
    hosts = [f"127.0.0.1:{port + r}" for r in range(ranks)] if ranks > 1 else ["solo"]
    processes = []
    for rank in range(ranks):
        spec = {"model": str(model), "rank": rank, "hosts": hosts,
                "layers": layer_ranges(ranks)[rank], "tokens": args.tokens,
                "repeats": args.repeats, "streams": [], "micro_batches": False}
        processes.append(subprocess.Popen(
            ["taskset", "-c", str(rank % (os.cpu_count() or 1)), sys.executable, __file__,
             json.dumps(spec)], stdout=subprocess.PIPE, text=True,
            env=rank_environment(model)))
    runs: dict[str, dict[int, list[list[Event]]]] = defaultdict(dict)
    try:
        for process in processes:
            out, _ = process.communicate(timeout=900)
            if process.returncode != 0:
                raise SystemExit(f"a rank exited {process.returncode}")
            for line in out.splitlines():
                if line.startswith(MARK):
                    record = json.loads(line[len(MARK):])
                    runs[record["run"]][record["rank"]] = decode_steps(
                        [tuple(event) for event in record["events"]])
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for name, by_rank in runs.items():
        print(f"\n{ranks} rank(s), {name}: ms, median (min)")
        for stretch, values in stretches(by_rank).items():
            print(f"  {stretch:30s} {statistics.median(values):8.2f} ({min(values):.2f})")


def main() -> None:
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):
        run_rank(json.loads(sys.argv[1]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ranks", default="1,2", help="configurations, e.g. 1,2,2")
    args = parser.parse_args()
    model = bundled_mlx_model(Path(os.environ.get("SKULK_BENCH_MODELS",
                                                  tempfile.gettempdir() + "/skulk-bench-models")))
    for index, ranks in enumerate(int(r) for r in args.ranks.split(",")):
        run_configuration(model, ranks, args, PORT + 10 * index)


if __name__ == "__main__":
    main()
