"""The serving path's ceiling: how many tokens a second a node delivers, and what each
costs it, when the engine costs nothing.

One node serves the bundled model's card with the echo test engine in its runner (each
step echoes one word of every request in the batch; `--step-ms` paces the steps). A
lightweight raw-asyncio client (bench/serving_client.py; its own CPU is reported) streams
1, 64 and 256 completions at once over real HTTP. For each level: delivered tokens/s,
node CPU per token (the node process from /proc, runners apart), text events per token
(below 1: tokens that piled up went out as one delta), p50/p99 gap between text events at
the client, and the client's CPU. A few traced requests show how long the control plane
takes before the runner gets a request. A paced row (64 streams, the engine stepping every
`--paced-step-ms`) shows the cost per token when the node keeps up and every token is its
own event. Then the same levels with the model on node A and the client on node B (the
cross-node data plane).

    .venv/bin/python bench/serving_ceiling.py            # full: ~2-4 minutes
    .venv/bin/python bench/serving_ceiling.py --quick    # ~1 minute
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402
from bench.serving_client import LevelResult, run_level  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

LAUNCHER = [str(Path(__file__).resolve().parent / "echo_node.py")]
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process (not its children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def runners_cpu_seconds(pid: int) -> float:
    total = 0.0
    for child in psutil.Process(pid).children(recursive=True):
        try:
            total += cpu_seconds(child.pid)
        except OSError:
            pass
    return total


def settle(pid: int, timeout: float = 5.0) -> float:
    """Wait until the node and its runners are idle (under a tenth of a core over 0.2 s):
    a node finishes a burst's streams for a few hundred ms after the client has them all,
    and a request sent meanwhile measures that work, not its own way to the runner.
    Returns the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        before = cpu_seconds(pid) + runners_cpu_seconds(pid)
        time.sleep(0.2)
        if cpu_seconds(pid) + runners_cpu_seconds(pid) - before <= 0.02:
            break
    return round(time.monotonic() - started, 2)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure_level(client_node: NodeProcess, model_node: NodeProcess, streams: int,
                  tokens: int, requests: int) -> dict[str, Any]:
    """One level: the client on `client_node`'s API, CPU read on both nodes."""
    assert client_node.process is not None and model_node.process is not None
    nodes = {client_node.process.pid, model_node.process.pid}
    before = {pid: cpu_seconds(pid) for pid in nodes}
    runners_before = runners_cpu_seconds(model_node.process.pid)
    result: LevelResult = uvloop.run(run_level("127.0.0.1", client_node.api_port, streams,
                                               tokens, requests))
    node_cpu = {pid: cpu_seconds(pid) - before[pid] for pid in nodes}
    runners = runners_cpu_seconds(model_node.process.pid) - runners_before
    delivered = result.tokens or 1
    row = {
        "streams": streams, "requests": result.requests, "tokens": result.tokens,
        "wall_s": round(result.wall_seconds, 3),
        "tokens_per_s": round(result.tokens / result.wall_seconds, 1),
        "node_cpu_ms_per_token": round(sum(node_cpu.values()) * 1000 / delivered, 4),
        "runner_cpu_ms_per_token": round(runners * 1000 / delivered, 4),
        "client_cpu_ms_per_token": round(result.client_cpu_seconds * 1000 / delivered, 4),
        "client_cpu_share": round(result.client_cpu_seconds / result.wall_seconds, 3),
        "events_per_token": round(result.text_events / delivered, 3),
        "gap_p50_ms": round(percentile(result.gaps, 0.5) * 1000, 3),
        "gap_p99_ms": round(percentile(result.gaps, 0.99) * 1000, 3),
        "first_token_p50_ms": round(percentile(result.first_token_seconds, 0.5) * 1000, 2),
    }
    if client_node is not model_node:
        row["client_node_cpu_ms_per_token"] = round(
            node_cpu[client_node.process.pid] * 1000 / delivered, 4)
        row["model_node_cpu_ms_per_token"] = round(
            node_cpu[model_node.process.pid] * 1000 / delivered, 4)
    print("  ".join(f"{key}={value}" for key, value in row.items()), flush=True)
    return row


def control_plane_ms(node: NodeProcess, samples: int) -> dict[str, float]:
    """Traced one-token requests: request received → handed to the runner, and the
    runner taking it (medians, ms), once the node is idle after the levels before."""
    assert node.process is not None
    settled_s = settle(node.process.pid)
    body = {"model": "smollm2-135m", "max_tokens": 1,
            "messages": [{"role": "user", "content": "one"}]}
    before_runner, runner_queue, first_chunk = [], [], []
    with httpx.Client(base_url=node.url, timeout=30) as http:
        http.post("/v1/tracing", json={"enabled": True}).raise_for_status()
        for _ in range(samples):
            reply = http.post("/v1/chat/completions", json=body)
            reply.raise_for_status()
            trace = http.get(f"/v1/traces/{reply.headers['X-Skulk-Command-Id']}/raw").json()
            spans = {span["name"]: span for span in trace["spans"]}
            queue = spans["runner.queue"]
            before_runner.append((queue["start_us"] - trace["started_us"]) / 1000)
            runner_queue.append(queue["duration_us"] / 1000)
            prefill = spans["runner.prefill"]
            first_chunk.append((prefill["start_us"] + prefill["duration_us"]
                                - trace["started_us"]) / 1000)
        http.post("/v1/tracing", json={"enabled": False}).raise_for_status()
    row = {"samples": samples, "settled_after_s": settled_s,
           "api_to_runner_handover_ms_p50": round(statistics.median(before_runner), 3),
           "runner_takes_task_ms_p50": round(statistics.median(runner_queue), 3),
           "api_to_first_chunk_ms_p50": round(statistics.median(first_chunk), 3)}
    print("control plane:", row, flush=True)
    return row


NODE_FLAGS: list[str] = []  # given to every node this run starts (--no-local-delivery)


def echo_node(directory: Path, *flags: str, authority: Path | None = None) -> NodeProcess:
    """A node running bench/echo_node.py; its queue takes every stream of the levels (the
    default bound follows the real engine's batch size, not the echo runner's)."""
    return NodeProcess(directory, "--max-queue", "2048", *NODE_FLAGS, *flags,
                       authority=authority, program=LAUNCHER)


def run_levels(client_node: NodeProcess, model_node: NodeProcess, levels: list[int],
               tokens: int, requests: int) -> list[dict[str, Any]]:
    uvloop.run(run_level("127.0.0.1", client_node.api_port, 4, 8, 1))  # warm up
    return [measure_level(client_node, model_node, streams, tokens,
                          requests if streams > 1 else requests * 4)
            for streams in levels]


def one_node(root: Path, args: argparse.Namespace, levels: list[int]) -> dict[str, Any]:
    node = echo_node(root / "solo", "--serve", "smollm2-135m", "--echo-step-ms",
                     str(args.step_ms))
    node.start()
    try:
        node.wait_model_ready()
        print(f"one node (echo step {args.step_ms} ms):", flush=True)
        rows = run_levels(node, node, levels, args.tokens, args.requests)
        control = control_plane_ms(node, 20 if args.quick else 50)
    finally:
        node.stop()
    return {"levels": rows, "control_plane": control}


def paced(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """64 streams from an engine that steps every `--paced-step-ms`: the node keeps up, so
    each token is its own event and its CPU per token is the per-event cost."""
    node = echo_node(root / "paced", "--serve", "smollm2-135m", "--echo-step-ms",
                     str(args.paced_step_ms))
    node.start()
    try:
        node.wait_model_ready()
        print(f"one node, paced (echo step {args.paced_step_ms} ms):", flush=True)
        [row] = run_levels(node, node, [64], args.tokens, 1)
    finally:
        node.stop()
    return {"step_ms": args.paced_step_ms, **row}


def two_nodes(root: Path, args: argparse.Namespace, levels: list[int]) -> list[dict[str, Any]]:
    namespace = f"ceiling-{os.getpid()}"
    model = echo_node(root / "a", "--namespace", namespace, "--serve", "smollm2-135m",
                      "--echo-step-ms", str(args.step_ms), authority=root / "authority")
    model.start()
    client = echo_node(root / "b", "--namespace", namespace, "--no-worker", "--peer",
                       f"tcp/127.0.0.1:{model.transport_port}", authority=root / "authority")
    try:
        client.start()
        model.wait_model_ready()
        client.wait_model_ready()
        print("two nodes (model on A, client on B):", flush=True)
        return run_levels(client, model, levels, args.tokens, args.requests)
    finally:
        client.stop()
        model.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter streams, one round")
    parser.add_argument("--streams", default="1,64,256", help="concurrency levels")
    parser.add_argument("--tokens", type=int, default=None, help="tokens per request")
    parser.add_argument("--requests", type=int, default=None,
                        help="requests per stream, one after another")
    parser.add_argument("--step-ms", type=float, default=0.0,
                        help="the echo engine's pause per step (0: costs nothing)")
    parser.add_argument("--paced-step-ms", type=float, default=10.0,
                        help="the paced row's step (0: no paced row)")
    parser.add_argument("--no-local-delivery", action="store_true",
                        help="the nodes' own messages round-trip through the transport, "
                             "sealed and verified (the comparison for local delivery)")
    parser.add_argument("--one-node-only", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="print, write no JSON")
    args = parser.parse_args()
    args.tokens = args.tokens or (64 if args.quick else 200)
    args.requests = args.requests or (1 if args.quick else 2)
    levels = [int(level) for level in args.streams.split(",")]
    if args.no_local_delivery:
        NODE_FLAGS.append("--no-local-delivery")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="skulk-ceiling-") as scratch:
        root = Path(scratch)
        payload: dict[str, Any] = {
            "settings": {"levels": levels, "tokens_per_request": args.tokens,
                         "requests_per_stream": args.requests, "echo_step_ms": args.step_ms,
                         "quick": args.quick,
                         "local_delivery": not args.no_local_delivery},
            "one_node": one_node(root, args, levels)}
        if args.paced_step_ms > 0:
            payload["paced"] = paced(root, args)
        if not args.one_node_only:
            payload["two_nodes"] = two_nodes(root, args, levels)
    payload["load_average_before"] = [round(value, 2) for value in load_before]
    payload["load_average_after"] = [round(value, 2) for value in os.getloadavg()]
    print(f"load average before {load_before}, after {os.getloadavg()}")
    if not args.no_write:
        write_result("serving_ceiling", payload, "bench/serving_ceiling.py" + "".join(
            f" {flag}" for flag, given in (("--quick", args.quick),
                                           ("--no-local-delivery", args.no_local_delivery))
            if given))


if __name__ == "__main__":
    main()
