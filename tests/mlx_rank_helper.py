"""One rank of an MLX ring, for tests/test_mlx_distributed.py (and by hand, to measure).

Run as `python -m tests.mlx_rank_helper '<json spec>'` from the repository root. Modes:

- "greedy": connect, load this rank's shard, prefill a prompt and decode greedily (the
  deciding rank takes the argmax, every rank learns it through a fixed-shape all_sum);
  each rank writes `rank<r>.json` (tokens, timings) into `out`, the decider also
  `logits.npy` (the prompt's logits).
- "many": "greedy" for each of `jobs` (each its own model_dir, sharding, ranges and out)
  in turn over the same ring, so one set of processes checks many models.
- "engine": the MLX engine itself as one rank of a split instance (it wires its own
  ring): load, warm up, answer `texts` (or one `text`) as chat requests all in flight
  at once; rank 0 writes the tokens it streamed, per request, to `out/engine.json`.
- "staggered": the engine as in "engine", but request i reaches this rank at its step
  `arrive[i][rank]`, and rank `cancel_rank` cancels request `cancel` once it has seen it
  join and stepped `cancel_after` more times; each rank writes `out/rank<r>.json`
  (tokens per request from rank 0, how each ended, the overlapped-run counters).
- "connect": connect only (a test starts one rank of two to see the deadline end it).
- "stall": connect, then rank 0 either exits at once or hangs ("peer" = "exit" | "hang")
  while rank 1 waits in a recv from it, which must end within the collective deadline.
"""

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

import mlx.core as mx
import numpy as np

from skulk.worker.engines.mlx.collectives import Group, connect_ring
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.mlx.shard_loader import load_shard


def greedy(
    shard: ModelShard, group: Group, prompt: list[list[int]], padding: list[int], steps: int
) -> tuple[list[list[int]], mx.array | None, list[float]]:
    """Greedy tokens [steps][B], the prompt logits on the decider, seconds per decode step."""
    cache = shard.make_cache(padding)
    logits = shard.forward(mx.array(prompt, dtype=mx.int32), cache)
    prompt_logits = logits
    if logits is not None:
        mx.eval(logits)
    tokens: list[list[int]] = []
    step_seconds: list[float] = []
    for _ in range(steps):
        started = time.perf_counter()
        if logits is not None:
            chosen = mx.argmax(logits[:, -1, :], axis=-1).astype(mx.int32)
        else:
            chosen = mx.zeros((len(prompt),), dtype=mx.int32)
        # Non-deciding ranks add zeros: the sum is the decider's choice on every rank.
        chosen = group.all_sum(chosen)
        tokens.append([int(t) for t in cast(list[int], chosen.tolist())])
        logits = shard.forward(chosen[:, None], cache)
        if logits is not None:
            mx.eval(logits)
        step_seconds.append(time.perf_counter() - started)
    return tokens, prompt_logits, step_seconds


def run_greedy(spec: dict[str, Any], group: Group) -> None:
    rank = group.rank
    start_layer, end_layer = spec["ranges"][rank]
    shard = load_shard(Path(spec["model_dir"]), group, start_layer, end_layer,
                       spec["sharding"])
    group.barrier()
    tokens, prompt_logits, step_seconds = greedy(
        shard, group, spec["prompt"], spec["padding"], int(spec["steps"]))
    out = Path(spec["out"])
    if prompt_logits is not None:
        np.save(out / "logits.npy", np.array(prompt_logits))
    (out / f"rank{rank}.json").write_text(json.dumps({
        "rank": rank, "decides": shard.decides, "tokens": tokens,
        "step_seconds": step_seconds}))


def run_stall(spec: dict[str, Any], group: Group) -> None:
    print("connected", flush=True)
    if group.rank == 0:
        if spec["peer"] == "exit":
            os._exit(0)
        time.sleep(600)
        return
    group.recv((4,), mx.float32, 0)
    print("received: the peer was not stalled", flush=True)


def run_engine(spec: dict[str, Any]) -> None:
    from skulk.shared.types.chunks import TokenChunk
    from skulk.shared.types.ids import ModelId, TaskId
    from skulk.shared.types.tasks import ChatMessage, GenerationParams
    from skulk.worker.engines.mlx.engine import MlxEngine
    from skulk.worker.engines.protocol import EngineConfig, TaskDone, TaskOutput

    rank, hosts = int(spec["rank"]), spec["hosts"]
    start_layer, end_layer = spec["ranges"][rank]
    engine = MlxEngine(EngineConfig(
        model_path=spec["model_dir"], context_token_limit=512, start_layer=start_layer,
        end_layer=end_layer, world_size=len(hosts), rank=rank,
        options=MlxOptions.parse({"ring_hosts": ",".join(hosts), "ring_connect_seconds": "30",
                                  **spec.get("options", {})})))
    engine.load()
    engine.warm_up()
    texts = spec["texts"] if "texts" in spec else [spec["text"]]
    for index, text in enumerate(texts):  # all in flight together: one batch
        engine.submit(TaskId(f"t{index}"), GenerationParams(
            model_id=ModelId("m"), max_tokens=int(spec["max_tokens"]), temperature=0.0,
            messages=[ChatMessage(role="user", content=text)]))
    tokens: dict[str, list[int]] = {f"t{index}": [] for index in range(len(texts))}
    done: set[str] = set()
    while len(done) < len(texts):
        for event in engine.step():
            if isinstance(event, TaskOutput) and isinstance(event.chunk, TokenChunk):
                tokens[event.task_id].extend(event.chunk.token_ids)
            elif isinstance(event, TaskDone):
                done.add(event.task_id)
    if rank == 0:
        answers = [tokens[f"t{index}"] for index in range(len(texts))]
        (Path(spec["out"]) / "engine.json").write_text(json.dumps(
            {"tokens": answers[0], "answers": answers}))


def run_staggered(spec: dict[str, Any]) -> None:
    from skulk.shared.types.chunks import TokenChunk
    from skulk.shared.types.ids import ModelId, TaskId
    from skulk.shared.types.tasks import ChatMessage, GenerationParams
    from skulk.worker.engines.mlx.engine import MlxEngine
    from skulk.worker.engines.protocol import EngineConfig, TaskDone, TaskJoined, TaskOutput

    rank, hosts = int(spec["rank"]), spec["hosts"]
    start_layer, end_layer = spec["ranges"][rank]
    engine = MlxEngine(EngineConfig(
        model_path=spec["model_dir"], context_token_limit=512, start_layer=start_layer,
        end_layer=end_layer, world_size=len(hosts), rank=rank,
        options=MlxOptions.parse({"ring_hosts": ",".join(hosts), "ring_connect_seconds": "30",
                                  **spec.get("options", {})})))
    engine.load()
    engine.warm_up()
    requests = spec["requests"]  # [text, max_tokens, {rank: arrival step}]
    tokens: dict[str, list[int]] = {f"t{i}": [] for i in range(len(requests))}
    ended: dict[str, str] = {}
    cancel_id = f"t{spec['cancel']}" if rank == int(spec["cancel_rank"]) else None
    joined_at: int | None = None
    step = 0
    while len(ended) < len(requests):
        for index, (text, max_tokens, arrive) in enumerate(requests):
            if arrive[str(rank)] == step:
                engine.submit(TaskId(f"t{index}"), GenerationParams(
                    model_id=ModelId("m"), max_tokens=max_tokens, temperature=0.0,
                    messages=[ChatMessage(role="user", content=text)]))
        if cancel_id is not None and joined_at is not None and (
                step - joined_at == int(spec["cancel_after"])):
            engine.cancel(TaskId(cancel_id))
        for event in engine.step():
            if isinstance(event, TaskOutput) and isinstance(event.chunk, TokenChunk):
                tokens[event.task_id].extend(event.chunk.token_ids)
            elif isinstance(event, TaskJoined) and event.task_id == cancel_id:
                joined_at = step
            elif isinstance(event, TaskDone):
                ended[event.task_id] = event.status
        step += 1
    loop = engine.loop
    (Path(spec["out"]) / f"rank{rank}.json").write_text(json.dumps({
        "tokens": tokens, "ended": ended, "runs": loop.overlapped_runs,
        "overlapped_steps": loop.overlapped_steps, "steps": step}))


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec["mode"] == "engine":
        run_engine(spec)
        return
    if spec["mode"] == "staggered":
        run_staggered(spec)
        return
    group = connect_ring(int(spec["rank"]), spec["hosts"], float(spec["connect_deadline"]),
                         float(spec.get("collective_deadline", 30.0)))
    if spec["mode"] == "greedy":
        run_greedy(spec, group)
    elif spec["mode"] == "many":
        for job in spec["jobs"]:
            run_greedy({**spec, **job}, group)
    elif spec["mode"] == "stall":
        run_stall(spec, group)
    else:
        print("connected", flush=True)


if __name__ == "__main__":
    main()
