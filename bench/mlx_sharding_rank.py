"""One rank (or the one node) of bench/mlx_sharding.py: the MLX engine itself, driven
through its batching interface (submit / step), on whatever core and network namespace the
driver started it in.

    python bench/mlx_sharding_rank.py '<json spec>'

Every rank submits the same requests in the same order and steps until they are done (the
engine's ranks agree on joins among themselves); every rank prints one `BENCH {json}` line
with the facts of its process (cores, threads, BLAS) and, per phase, the time to first
token, decode tokens/s, aggregate tokens/s and the share of its core it got (only rank 0's
timings mean anything: it streams). With `"hand": true` in the spec it is instead the
issue's hand measurement: mlx-lm's whole model decoding one prompt, no engine.
"""

import ctypes
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from skulk.shared.types.chunks import TokenChunk  # noqa: E402
from skulk.shared.types.ids import ModelId, TaskId  # noqa: E402
from skulk.shared.types.tasks import ChatMessage, GenerationParams  # noqa: E402
from skulk.worker.engines.mlx.engine import MlxEngine  # noqa: E402
from skulk.worker.engines.mlx.options import MlxOptions  # noqa: E402
from skulk.worker.engines.protocol import EngineConfig, TaskDone, TaskOutput  # noqa: E402

PROMPTS = ["Explain why the sky is blue.", "Write a short poem about the sea.",
           "List three uses of a paperclip."]
MARK = "BENCH "


def params(prompt: str, tokens: int) -> GenerationParams:
    return GenerationParams(model_id=ModelId("bench"), max_tokens=tokens, temperature=0.0,
                            messages=[ChatMessage(role="user", content=prompt)])


def run_batch(engine: MlxEngine, name: str, streams: int, tokens: int) -> dict[str, Any]:
    """Submit `streams` requests at once, step until all are done."""
    ids = [TaskId(f"{name}-{i}") for i in range(streams)]
    started, cpu_started = time.perf_counter(), time.process_time()
    for index, task_id in enumerate(ids):
        engine.submit(task_id, params(PROMPTS[index % len(PROMPTS)], tokens))
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    produced: dict[str, int] = {}
    gaps: list[float] = []  # seconds per token between one request's outputs
    done: set[str] = set()
    while len(done) < streams:
        for event in engine.step():
            now = time.perf_counter()
            if isinstance(event, TaskOutput) and isinstance(event.chunk, TokenChunk):
                count = len(event.chunk.token_ids)
                if count:
                    first.setdefault(event.task_id, now)
                    if event.task_id in last:
                        gaps.append((now - last[event.task_id]) / count)
                    last[event.task_id] = now
                    produced[event.task_id] = produced.get(event.task_id, 0) + count
            elif isinstance(event, TaskDone):
                if event.status != "complete":
                    raise RuntimeError(f"{event.task_id} ended {event.status}: {event.error}")
                done.add(event.task_id)
    elapsed = time.perf_counter() - started
    total = sum(produced.values())
    decode = [(produced[t] - 1) / (last[t] - first[t]) for t in produced
              if produced[t] > 1 and last[t] > first[t]]
    return {"ttft_s": statistics.median(first[t] - started for t in first) if first else 0.0,
            "decode_tps": statistics.median(decode) if decode else 0.0,
            "aggregate_tps": total / elapsed, "tokens": total,
            # The fastest token: others' work on a shared machine only adds time, so on
            # a busy one this is the closer figure to a quiet machine's decode rate.
            "decode_best_tps": 1 / min(gaps) if gaps else 0.0,
            "cpu_per_wall": (time.process_time() - cpu_started) / elapsed}


def process_facts() -> dict[str, Any]:
    """What this process really runs with: its cores, threads, BLAS and thread variables
    (a one-node baseline slower than a hand run is explained here, or ruled out)."""
    from skulk.worker.engines.mlx.cpu import openblas_loaded

    blas_threads = None
    try:
        blas_threads = int(ctypes.CDLL(None).openblas_get_num_threads())
    except (OSError, AttributeError):
        pass
    status = Path("/proc/self/status").read_text()
    threads = next((int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("Threads:")), None)
    return {"cores": sorted(os.sched_getaffinity(0)), "threads": threads,
            "openblas": openblas_loaded(), "blas_threads": blas_threads,
            "env": {name: os.environ.get(name) for name in
                    ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "LD_PRELOAD")}}


def hand_run(spec: dict[str, Any]) -> dict[str, Any]:
    """mlx-lm's whole model decoding greedily on its own, as one measures by hand: no
    engine, no batching, one prompt."""
    import mlx.core as mx

    from skulk.worker.engines.mlx import mlx_api

    model_dir = Path(spec["model"])
    model = mlx_api.load_model(model_dir)
    tokenizer = mlx_api.load_tokenizer(model_dir)
    prompt = tokenizer.encode(tokenizer.render_chat([{"role": "user", "content": PROMPTS[0]}]),
                              add_special_tokens=False)
    runs = []
    for _ in range(2):  # the first compiles and warms the caches
        cache = mlx_api.make_batch_cache(model.n_layers, [0])
        started, cpu_started = time.perf_counter(), time.process_time()
        token = mx.argmax(model(mx.array([prompt], dtype=mx.int32), cache)[:, -1], axis=-1)
        token.item()
        first = time.perf_counter()
        for _ in range(int(spec["tokens"]) - 1):
            token = mx.argmax(model(token[:, None], cache)[:, -1], axis=-1)
            token.item()
        ended = time.perf_counter()
        runs.append({"ttft_s": first - started,
                     "decode_tps": (int(spec["tokens"]) - 1) / (ended - first),
                     "cpu_per_wall": (time.process_time() - cpu_started) / (ended - started)})
    return {"process": process_facts(), "single": runs[-1]}


def collective_probe(engine: MlxEngine, probe: dict[str, Any]) -> dict[str, Any]:
    """Measured µs of one all-reduce of a [rows, 1, hidden] activation in the model's
    dtype, as the split layers make them inside one evaluated graph: a chain of
    `CHAIN` all_sums evaluated at once, per rows in `probe["rows"]` (every rank runs it)."""
    import mlx.core as mx

    from skulk.worker.engines.mlx.collectives import RingGroup
    from skulk.worker.engines.mlx.corruption_guard import unguarded

    ring = unguarded(engine.loop.shard.group)
    if not isinstance(ring, RingGroup):
        raise RuntimeError("the collective probe needs a ring")
    dtype = getattr(mx, probe["dtype"])
    measured: dict[str, Any] = {}
    for rows in probe["rows"]:
        # 0 rows: one value, the ring's round trip with (almost) nothing to carry.
        shape = (1,) if rows == 0 else (rows, 1, int(probe["hidden"]))
        x = mx.ones(shape, dtype=dtype)
        times = []
        for _ in range(4):  # the first warms the ring's buffers
            y = x
            for _ in range(CHAIN):
                y = mx.distributed.all_sum(y, group=ring.native, stream=mx.cpu) * 0.5
            started = time.perf_counter()
            mx.eval(y)
            times.append((time.perf_counter() - started) / CHAIN)
        measured[f"rows-{rows}"] = {"us": round(statistics.median(times[1:]) * 1e6, 1),
                                    "bytes": x.size * dtype.size}
    return measured


CHAIN = 64


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("hand"):
        print(MARK + json.dumps(hand_run(spec)), flush=True)
        return
    rank, hosts = int(spec["rank"]), list(spec["hosts"])
    start, end = spec["layers"]
    options = {"speculation": "false", "prefix_cache_mb": "0",
               "max_batch": str(spec.get("max_batch", 8)), "ring_connect_seconds": "60"}
    if len(hosts) > 1:
        options["ring_hosts"] = ",".join(hosts)
        options["sharding"] = spec.get("sharding", "pipeline")
        options["pipeline_micro_batches"] = "true" if spec["micro_batches"] else "false"
    engine = MlxEngine(EngineConfig(
        model_path=spec["model"], context_token_limit=2048, n_threads=1, start_layer=start,
        end_layer=end, world_size=len(hosts), rank=rank, options=MlxOptions.parse(options)))
    engine.load()
    engine.warm_up()
    tokens = int(spec["tokens"])
    report: dict[str, Any] = {"process": process_facts()}
    print(f"rank {rank}: {json.dumps(report['process'])}", file=sys.stderr, flush=True)
    singles = [run_batch(engine, f"single-{r}", 1, tokens) for r in range(spec["repeats"])]
    report["single"] = {key: statistics.median(run[key] for run in singles)
                        for key in ("ttft_s", "decode_tps", "cpu_per_wall", "tokens",
                                    "decode_best_tps")}
    for streams in spec["streams"]:
        report[f"streams-{streams}"] = run_batch(engine, f"streams-{streams}", streams,
                                                 tokens)["aggregate_tps"]
    if "collective_probe" in spec and len(hosts) > 1:
        report["collectives"] = collective_probe(engine, spec["collective_probe"])
    print(MARK + json.dumps(report), flush=True)  # every rank: its process facts


if __name__ == "__main__":
    main()
