"""What the history costs on a large cluster: a node answering `GET /v1/history` for N
nodes that each hold a full hour (720 samples, two instances), in one process.

- peer answer: the JSON one node sends a peer for its whole hour, and for one new sample.
- first / next refresh: the answering node reading every peer (the JSON encoded and
  decoded as the peer-read service does, no network), first the whole hours, then the one
  new sample each.
- answer: building `/v1/history`'s body (the cluster's series, each instance's, each
  node's latest) and its JSON size: the whole hour (a page's first load), and the last
  four slots (`since`, what the Charts view asks for every 5 s after).
- sample: one node reading its counters into its ring (`read_totals` + `record`).

    .venv/bin/python bench/history_scale.py [--nodes 200] [--quick]
"""

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402

from skulk.api.history.cluster import ClusterHistory  # noqa: E402
from skulk.api.history.recorder import InstanceQueue, MetricsHistory, NodeGauges  # noqa: E402
from skulk.api.history.samples import (  # noqa: E402
    RING_CAPACITY,
    SAMPLE_INTERVAL_SECONDS,
    RequestCounts,
)
from skulk.api.history.series import (  # noqa: E402
    cluster_series,
    instance_series,
    node_series,
    slot_of,
)
from skulk.api.history.totals import CounterTotals, read_totals  # noqa: E402
from skulk.api.metrics import LATENCY_BUCKETS, ApiMetrics  # noqa: E402
from skulk.shared.types.ids import NodeId  # noqa: E402

START = 1_800_000_000.0


def full_hour(seed: int, samples: int) -> MetricsHistory:
    """A node's ring, full: counters that grow as a busy node's do, two instances."""
    rng = random.Random(seed)
    history = MetricsHistory()
    tokens, generations = 0.0, 0
    buckets = [0] * (len(LATENCY_BUCKETS) + 1)
    per_instance = {f"inst-{seed % 7}": 0.0, f"inst-{seed % 7 + 7}": 0.0}
    for i in range(samples + 1):
        tokens += rng.uniform(0, 400)
        started = rng.randint(0, 12)
        generations += started
        for _ in range(started):
            buckets[min(int(rng.expovariate(1.0) * 4), len(buckets) - 1)] += 1
        for name in per_instance:
            per_instance[name] += rng.uniform(0, 200)
        totals = CounterTotals(
            requests=RequestCounts(tokens, generations, tuple(buckets)), refused=0,
            instances={n: RequestCounts(t, generations // 2, tuple(b // 2 for b in buckets))
                       for n, t in per_instance.items()})
        history.record(START + i * SAMPLE_INTERVAL_SECONDS, totals, NodeGauges(
            queue_depth=rng.randint(0, 8), cpu_percent=rng.uniform(5, 95),
            memory_used_bytes=rng.randint(8, 60) * 2**30, memory_total_bytes=64 * 2**30,
            runner_failures=0,
            instances={n: InstanceQueue("qwen2.5-7b", rng.randint(0, 4)) for n in per_instance}))
    return history


def body(history: ClusterHistory, since: float = 0.0) -> dict[str, object]:
    """`/v1/history`'s body, as its route builds it."""
    by_node = history.node_samples(NodeId("node-000"))
    newer = {n: [s for s in samples if slot_of(s.at) > since] for n, samples in by_node.items()}
    instances = [s for s in history.instance_samples() if slot_of(s.at) > since]
    return {"cluster": cluster_series(newer),
            "instances": [{"instance_id": i, "model_id": m, "series": s}
                          for i, (m, s) in instance_series(instances).items()],
            "nodes": [{"node_id": n, "latest": node_series(s[-1:])} for n, s in by_node.items()],
            "markers": [m.as_json() for m in history.markers()]}


async def measure(nodes: int, samples: int, repeats: int) -> dict[str, float]:
    peers = {NodeId(f"node-{i:03d}"): full_hour(i, samples) for i in range(1, nodes)}
    last = START + samples * SAMPLE_INTERVAL_SECONDS

    async def ask(node_id: NodeId, path: str) -> tuple[object, None] | tuple[None, str]:
        since = float(path.partition("?since=")[2])
        return json.loads(json.dumps(peers[node_id].answer(since))), None

    cluster = ClusterHistory(own=full_hour(0, samples), clock=lambda: last + 1)
    one = next(iter(peers.values()))
    started = time.perf_counter()
    await cluster.refresh(peers, ask)
    first_refresh = time.perf_counter() - started
    for index, history in enumerate(peers.values()):  # one more sample everywhere
        history.record(last + SAMPLE_INTERVAL_SECONDS, CounterTotals(
            requests=RequestCounts(1e9, 10**6)), NodeGauges(cpu_percent=float(index)))
    next_refreshes, answers, polls = [], [], []
    for _ in range(repeats):
        started = time.perf_counter()
        await cluster.refresh(peers, ask)
        next_refreshes.append(time.perf_counter() - started)
        started = time.perf_counter()
        encoded = json.dumps(body(cluster))
        answers.append(time.perf_counter() - started)
        started = time.perf_counter()
        polled = json.dumps(body(cluster, since=last - 3 * SAMPLE_INTERVAL_SECONDS))
        polls.append(time.perf_counter() - started)
    metrics, own = ApiMetrics(), MetricsHistory()
    for instance in range(4):
        metrics.count_tokens(f"inst-{instance}", 10)
        metrics.observe_first_token(f"inst-{instance}", 0.2)
    sample_times = []
    for i in range(200):
        started = time.perf_counter()
        own.record(START + i * 5, read_totals(metrics), NodeGauges())
        sample_times.append(time.perf_counter() - started)
    return {
        "nodes": nodes, "samples_per_node": samples,
        "peer_hour_answer_kib": len(json.dumps(one.answer())) / 1024,
        "peer_one_sample_answer_kib": len(json.dumps(one.answer(last))) / 1024,
        "first_refresh_ms": first_refresh * 1000,
        "next_refresh_ms": statistics.median(next_refreshes) * 1000,
        "answer_build_ms": statistics.median(answers) * 1000,
        "answer_kib": len(encoded) / 1024,
        "poll_answer_build_ms": statistics.median(polls) * 1000,
        "poll_answer_kib": len(polled) / 1024,
        "sample_us": statistics.median(sample_times) * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="50 nodes, 3 repeats")
    args = parser.parse_args()
    nodes, repeats = (50, 3) if args.quick else (args.nodes, args.repeats)
    results = anyio.run(measure, nodes, RING_CAPACITY, repeats)
    for key, value in results.items():
        print(f"{key:>28}: {value:,.1f}")
    write_result("history_scale", results, source=(
        f"bench/history_scale.py --nodes {nodes}: one process, peer reads JSON-encoded "
        f"without a network, medians of {repeats} refreshes and answers"))


if __name__ == "__main__":
    main()
