"""The MLX engine split across real `skulk run` processes, beside one node, in one run.

    .venv/bin/python bench/mlx_sharding.py [--tokens 32] [--repeats 2]

- decode tokens/s and time to first token of the bundled model (MLX fp32, greedy) on:
  one node; a 2- and a 3-node pipeline; a 3-node tensor split — ratios against one node;
- the per-token overhead of the pipeline's hops: a pipeline's time per token minus one
  node's (the ranks' own compute adds up to one node's, so the rest is the hops);
- aggregate tokens/s with 1, 4 and 8 concurrent requests on one node, with continuous
  batching and with `--no-batching`.

All nodes run on this machine: with 2 cores, three ranks share two cores and MLX's `recv`
busy-waits, so the split configurations measure the cost of oversubscription as much as
the cost of the hops. Read the ratios with that in mind.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

PROMPTS = ["Explain why the sky is blue.", "Write a short poem about the sea.",
           "List three uses of a paperclip."]
READY_SECONDS = 600.0


def nodes(root: Path, count: int, *extra: str) -> list[NodeProcess]:
    namespace = f"bench-mlx-{time.monotonic_ns()}"
    first = NodeProcess(root / "n0", "--namespace", namespace, "--no-auto-place", "-q", *extra)
    rest = [NodeProcess(root / f"n{i}", "--namespace", namespace, "--no-auto-place", "-q",
                        "--peer", f"tcp/127.0.0.1:{first.transport_port}", *extra)
            for i in range(1, count)]
    started = [node.start() for node in (first, *rest)]

    def observed() -> bool:
        summary = first.cluster()
        alive = [n for n in summary["nodes"] if n["alive"] and n["has_worker"]]
        return len(alive) == count and all(
            len(n.get("reachable_peers", [])) == count - 1 for n in alive)
    first.wait_until(observed, 90.0, "every node to observe the others")
    return started


def place(api: NodeProcess, **fields: Any) -> str:
    reply = httpx.post(f"{api.url}/place_instance", timeout=60,
                       json={"model_id": "smollm2-135m", "engine": "mlx", **fields})
    reply.raise_for_status()
    instance_id: str = reply.json()["instance_id"]
    api.wait_until(lambda: api.get(f"/instance/{instance_id}").json()["status"] == "ready",
                   READY_SECONDS, f"{fields} to be ready")
    return instance_id


def delete(api: NodeProcess, instance_id: str) -> None:
    httpx.delete(f"{api.url}/instance/{instance_id}", timeout=60).raise_for_status()
    api.wait_until(lambda: not api.state()["instances"], 120.0, "the instance to go")


def stream_once(api: NodeProcess, prompt: str, tokens: int) -> tuple[float, float, int]:
    """(time to first token, decode tokens/s after it, tokens) of one greedy stream."""
    body = {"model": "smollm2-135m", "max_tokens": tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": prompt}]}
    started = time.monotonic()
    first: float | None = None
    produced = 0
    with httpx.stream("POST", f"{api.url}/v1/chat/completions", json=body,
                      timeout=600) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if event.get("usage"):
                produced = event["usage"]["completion_tokens"]
            elif event["choices"] and event["choices"][0]["delta"].get("content"):
                first = first or time.monotonic()
    ended = time.monotonic()
    assert first is not None, "the stream produced no text"
    decode_rate = (produced - 1) / (ended - first) if produced > 1 and ended > first else 0.0
    return first - started, decode_rate, produced


def measure(api: NodeProcess, tokens: int, repeats: int) -> dict[str, float]:
    stream_once(api, "Hi", 4)  # warm: kernels compiled, caches allocated
    runs = [stream_once(api, p, tokens) for _ in range(repeats) for p in PROMPTS]
    return {"ttft_s": statistics.median(r[0] for r in runs),
            "decode_tps": statistics.median(r[1] for r in runs)}


def aggregate(api: NodeProcess, concurrency: int, tokens: int) -> float:
    """Tokens/s over all streams, from the first request to the last one finishing."""
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(concurrency)]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda p: stream_once(api, p, tokens), prompts))
    return sum(r[2] for r in results) / (time.monotonic() - started)


def splits(root: Path, tokens: int, repeats: int) -> dict[str, dict[str, float]]:
    trio = nodes(root / "trio", 3)
    try:
        api = trio[0]
        results = {}
        placements: list[tuple[str, dict[str, int | str]]] = [
            ("1 node", {"min_nodes": 1}),
            ("2-node pipeline", {"min_nodes": 2, "sharding": "pipeline"}),
            ("3-node pipeline", {"min_nodes": 3, "sharding": "pipeline"}),
            ("3-node tensor", {"min_nodes": 3, "sharding": "tensor"})]
        for label, fields in placements:
            instance_id = place(api, **fields)
            results[label] = measure(api, tokens, repeats)
            print(f"  {label}: {results[label]}", flush=True)
            delete(api, instance_id)
        return results
    finally:
        for node in trio:
            node.stop()


def batching(root: Path, tokens: int) -> dict[str, dict[int, float]]:
    results: dict[str, dict[int, float]] = {}
    for label, extra in [("batching", ()), ("no batching", ("--no-batching",))]:
        [solo] = nodes(root / label.replace(" ", "-"), 1, *extra)
        try:
            place(solo, min_nodes=1)
            stream_once(solo, "Hi", 4)
            results[label] = {c: aggregate(solo, c, tokens) for c in (1, 4, 8)}
            print(f"  {label}: {results[label]}", flush=True)
        finally:
            solo.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        print("splits (median over prompts and repeats):", flush=True)
        split = splits(root, args.tokens, args.repeats)
        print("concurrency (aggregate tokens/s, one node):", flush=True)
        batched = batching(root, args.tokens)
    one = split["1 node"]
    print("\n| configuration | TTFT | decode tok/s | TTFT ratio | decode ratio |")
    print("|---|---|---|---|---|")
    for label, result in split.items():
        print(f"| {label} | {result['ttft_s'] * 1000:.0f} ms | {result['decode_tps']:.1f} | "
              f"{result['ttft_s'] / one['ttft_s']:.2f} | "
              f"{result['decode_tps'] / one['decode_tps']:.2f} |")
    for label, hops in [("2-node pipeline", 1), ("3-node pipeline", 2)]:
        overhead = 1000 / split[label]["decode_tps"] - 1000 / one["decode_tps"]
        print(f"\n{label}: {overhead:.1f} ms per token beyond one node's compute "
              f"({overhead / hops:.1f} ms per hop, {hops} hop(s) + the token broadcast)")
    print("\n| concurrent requests | batching tok/s | no batching tok/s | ratio |")
    print("|---|---|---|---|")
    for concurrency in (1, 4, 8):
        on, off = batched["batching"][concurrency], batched["no batching"][concurrency]
        print(f"| {concurrency} | {on:.1f} | {off:.1f} | {on / off:.2f} |")
    write_result("mlx_sharding", {
        "tokens": args.tokens, "repeats": args.repeats,
        "splits": {label: {"ttft_ms": r["ttft_s"] * 1000, "decode_tps": r["decode_tps"]}
                   for label, r in split.items()},
        "concurrency": {label: {str(c): tps for c, tps in by_count.items()}
                        for label, by_count in batched.items()}})


if __name__ == "__main__":
    main()
