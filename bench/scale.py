"""What the control plane costs per node as the cluster grows, on the in-memory bus.

    .venv/bin/python bench/scale.py            # N = 3, 10, 30, 60, 120, 200
    .venv/bin/python bench/scale.py --quick    # N = 3, 10, 30 (about two minutes)
    .venv/bin/python bench/scale.py --sizes 50 --events 100
    .venv/bin/python bench/scale.py --quick --burst 0   # the isolated load only

N whole nodes (API and worker off) in one process on one core (bench/scale_harness.py).
For each N, in order:

- formation: all N start at once -> one master that every node follows, one session;
  with it the CPU of the busiest node meanwhile (the harness's wall time is every node's
  CPU on one core; a node on its own machine spends its own);
- idle: `--idle` seconds of nothing: control-plane bytes delivered per node per second
  by topic (telemetry, liveliness, election, sync) and each node's CPU per second;
- load, isolated: `--events` worker events (weights-fetch progress, the commonest)
  proposed by random followers one at a time at `--rate` per second, until every node
  applied all and every producer saw its events indexed. Per indexed event: the master
  node's and a follower's CPU (less what their idle planes' tasks spent meanwhile; the
  bus's fan-out, which Zenoh does off the publisher's loop, is given apart), the master's
  signed publications, deliveries and bytes, local events resent although indexed, and
  indexed events a node received again after applying them;
- load, bursts (`--burst` B > 0): as many events again at the same rate, proposed B at a
  time by B random followers at once (what a placement over several nodes, or runners
  reporting together, looks like): the same figures, suffixed `_bursts`. The master
  publishes what was ready together in one signed batch, so a burst costs it one
  signature, not B; each follower's proposal is its own message and signature check;
- load, one node's bursts: as many again, B at a time from one random follower (a node
  whose runners report together): suffixed `_one_node_bursts`. A node sends its proposals
  that were ready together as one signed message, so such a burst costs one check at the
  master and one signature there;
- failover: the master is killed -> one new master that every node follows; the
  election's deliveries and bytes over formation and failover.

The harness models N machines on one core where the product's timing would not hold here
(bench/scale_modelling.py): the nodes' election timeout is the product's plus what this
core takes to check a round's N(N-1) votes (`harness_election_timeout_seconds`), and what
the cluster built is frozen out of the collector's walks after formation and before each
load. Formation and failover are also given as each would take were every node on a core
of its own (`*_own_cores_model`: the election rounds it took times the coalescing and the
product's election timeout, plus the busiest node's CPU): the wall time here is every
node's CPU on one core.

The worst event-loop lag is the longest single step any node ran, idle and under load
(and apart, during failover): a node alone on its loop lags at least that much. The
collector's pauses are given apart: here they walk all N nodes' heap. Wall times here
are the whole cluster's CPU on one core: a node on its own machine does 1/N of it.
"""

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from loguru import logger

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402
from bench.scale_harness import BUS, ScaleCluster, StepClock, Traffic  # noqa: E402
from bench.scale_load import measure_load, spent_since  # noqa: E402
from bench.scale_modelling import (  # noqa: E402
    freeze_formed_cluster,
    harness_election_timeout,
    keep_frozen,
    release_frozen,
    seconds_to_open_a_vote,
)

from skulk.cluster.election import DEFAULT_COALESCE_SECONDS  # noqa: E402

FULL_SIZES = (3, 10, 30, 60, 120, 200)
QUICK_SIZES = (3, 10, 30)
HARNESS = "(harness)"


def _node_cpu(clock: StepClock, cluster: ScaleCluster) -> dict[str, float]:
    """Each node's CPU so far, less what the bus spent fanning its publications out."""
    spent = {name: clock.busy[name] for name in cluster.members}
    for (name, _), seconds in cluster.bus.fan_out.items():
        if name in spent:
            spent[name] -= seconds
    return spent


def _round(cluster: ScaleCluster) -> int:
    """The latest election round any running node is in."""
    return max(m.node.election.clock for m in cluster.members.values()
               if m.node.election is not None)


def _own_cores(rounds: int, election_timeout: float, busiest_node_cpu: float) -> float:
    """A phase's time were each node on a core of its own, modelled: each election round
    it took waits the coalescing and the election timeout, which every node waits at once,
    and the busiest node's CPU is the work on its critical path. The wall time here is
    every node's CPU on one core (and, on a loaded machine, waits for that core)."""
    return max(rounds, 1) * (DEFAULT_COALESCE_SECONDS + election_timeout) + busiest_node_cpu


def _per_topic(traffic: Traffic, divisor: float) -> dict[str, float]:
    return {topic: round(count / divisor, 3)
            for topic, count in sorted(traffic.delivered_bytes.items())}


async def measure(n: int, *, events: int, rate: float, idle_seconds: float,
                  election_timeout: float, clock: StepClock, burst: int = 0
                  ) -> dict[str, Any]:
    """One cluster of `n` nodes through formation, idle, load and failover.

    `election_timeout` is the product's, which the own-cores model charges each round; the
    nodes here wait it plus what this one core takes to open a round's votes
    (bench/scale_modelling.py), and what a formed cluster built is kept out of the
    collector's walks until the size is done."""
    vote_seconds = seconds_to_open_a_vote()
    run_timeout = harness_election_timeout(n, election_timeout, vote_seconds)
    try:
        with tempfile.TemporaryDirectory(prefix="skulk-scale-") as root:
            row = await _measure_in(Path(root), n, events=events, rate=rate,
                                    idle_seconds=idle_seconds,
                                    election_timeout=election_timeout,
                                    run_timeout=run_timeout, clock=clock, burst=burst)
    finally:
        release_frozen()
    return {"nodes": n, "harness_election_timeout_seconds": round(run_timeout, 3),
            "harness_vote_open_us": round(1e6 * vote_seconds, 1), **row}


async def _measure_in(root: Path, n: int, *, events: int, rate: float, idle_seconds: float,
                      election_timeout: float, run_timeout: float, clock: StepClock,
                      burst: int) -> dict[str, Any]:
    # Waits allow for the harness's rounds: each lasts `run_timeout` here.
    converge_within = 30 + n + 4 * run_timeout
    async with anyio.create_task_group() as tasks:
        cluster = ScaleCluster(tasks, root, clock, run_timeout)
        started = time.perf_counter()
        for i in range(n):
            cluster.start(f"n{i:03d}")
        master_id = await cluster.wait_converged(timeout=converge_within)
        formation = time.perf_counter() - started
        formation_cpu = max(_node_cpu(clock, cluster).values())
        formation_rounds = _round(cluster)
        formation_own = _own_cores(formation_rounds, election_timeout, formation_cpu)
        formation_traffic = cluster.bus.traffic.copy()
        freeze_formed_cluster()
        tasks.start_soon(keep_frozen, name="(harness) keep frozen")
        await anyio.sleep(1.0)  # the readings and agreements that follow an election
        clock.reset_longest()

        cpu_before, traffic_before = _node_cpu(clock, cluster), cluster.bus.traffic.copy()
        await anyio.sleep(idle_seconds)
        idle_cpu = spent_since(_node_cpu(clock, cluster), cpu_before)
        idle = cluster.bus.traffic.since(traffic_before)

        master = cluster.members[cluster.name_of(master_id)]
        isolated = await measure_load(cluster, clock, master, events=events, rate=rate, burst=1)
        bursts = {} if burst <= 0 else {
            f"{key}_bursts": value for key, value in (await measure_load(
                cluster, clock, master, events=events, rate=rate, burst=burst)).items()}
        one_node_bursts = {} if burst <= 0 else {
            f"{key}_one_node_bursts": value for key, value in (await measure_load(
                cluster, clock, master, events=events, rate=rate, burst=burst,
                one_node=True)).items()}
        longest = {name: seconds for name, seconds in clock.longest.items()
                   if name not in (BUS, HARNESS)}
        gc_pause = clock.longest_gc_pause
        lag_node = max(longest, key=lambda name: longest[name])
        worst_task = clock.longest_task.get(lag_node, "?")

        clock.reset_longest()
        before_failover = cluster.bus.traffic.copy()
        killed_at, round_before = time.perf_counter(), _round(cluster)
        await cluster.kill(master.name)
        cpu_before = _node_cpu(clock, cluster)
        new_master = await cluster.wait_converged(timeout=converge_within)
        failover = time.perf_counter() - killed_at
        failover_cpu = max(spent_since(_node_cpu(clock, cluster), cpu_before).values())
        failover_rounds = _round(cluster) - round_before
        failover_own = _own_cores(failover_rounds, election_timeout, failover_cpu)
        failover_traffic = cluster.bus.traffic.since(before_failover)
        failover_longest = {name: seconds for name, seconds in clock.longest.items()
                            if name not in (BUS, HARNESS)}
        assert new_master != master_id
        tasks.cancel_scope.cancel()

    return {
        "formation_seconds": round(formation, 3),
        "failover_seconds": round(failover, 3),
        # On its own machine a node would take about its own share: the busiest node's.
        "formation_seconds_own_cores_model": round(formation_own, 3),
        "failover_seconds_own_cores_model": round(failover_own, 3),
        "election_rounds_formation": formation_rounds,
        "election_rounds_failover": failover_rounds,
        "formation_cpu_seconds_busiest_node": round(formation_cpu, 3),
        "failover_cpu_seconds_busiest_node": round(failover_cpu, 3),
        **isolated,
        "burst": burst,
        **bursts,
        **one_node_bursts,
        "idle_bytes_per_node_second": round(
            sum(idle.delivered_bytes.values()) / n / idle_seconds),
        "idle_bytes_per_node_second_by_topic": _per_topic(idle, n * idle_seconds),
        "idle_cpu_ms_per_node_second": round(
            1000 * sum(idle_cpu.values()) / n / idle_seconds, 3),
        "worst_step_ms": round(1000 * longest[lag_node], 2),
        "worst_step_task": worst_task,
        "worst_step_failover_ms": round(1000 * max(failover_longest.values()), 2),
        "longest_gc_pause_ms_all_nodes_heap": round(1000 * gc_pause, 2),
        "election_deliveries_formation": formation_traffic.deliveries["election"],
        "election_bytes_formation": formation_traffic.delivered_bytes["election"],
        "election_deliveries_failover": failover_traffic.deliveries["election"],
        "election_bytes_failover": failover_traffic.delivered_bytes["election"],
    }


async def run_sizes(sizes: list[int], *, events: int, rate: float, idle_seconds: float,
                    election_timeout: float, burst: int = 0) -> list[dict[str, Any]]:
    clock = StepClock()
    clock.install()
    rows = []
    try:
        for n in sizes:
            gc.collect()
            try:
                row = await measure(n, events=events, rate=rate, idle_seconds=idle_seconds,
                                    election_timeout=election_timeout, clock=clock,
                                    burst=burst)
            except TimeoutError:  # one core could not carry this many: say so, go on
                row = {"nodes": n, "error": "a phase did not finish in its time (the one "
                                            "core was saturated)"}
            print(" ".join(f"{key}={value}" for key, value in row.items()
                           if not isinstance(value, dict)), flush=True)
            rows.append(row)
    finally:
        clock.uninstall()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 3, 10, 30 only")
    parser.add_argument("--sizes", type=int, nargs="+", help="the cluster sizes to run")
    parser.add_argument("--events", type=int, default=200, help="events proposed per size")
    parser.add_argument("--rate", type=float, default=20.0, help="events proposed a second")
    # Nodes started together send their unchanged readings in phase, once a full refresh
    # (15 s) has passed at a 2 s reading step, so one every 16 s or a little more when
    # steps run late: a 16 s window held every node's refresh or none (one quiet run read
    # 0 B/s at 200 nodes, another 16 kB/s). Two refreshes' worth reads their average.
    parser.add_argument("--idle", type=float, default=34.0,
                        help="seconds of idle measured (at least two 15 s full refreshes)")
    parser.add_argument("--burst", type=int, default=10,
                        help="a second load of as many events, this many at once by as many "
                             "followers (0: none)")
    parser.add_argument("--name", default="scale",
                        help="the results' benchmark name (the website charts `scale`)")
    parser.add_argument("--election-timeout", type=float, default=1.0,
                        help="the nodes' election timeout (the product's default: 1 s)")
    args = parser.parse_args()
    sizes = args.sizes or list(QUICK_SIZES if args.quick else FULL_SIZES)
    logger.disable("skulk")  # 200 nodes' logs would cost more than what is measured
    rows = anyio.run(lambda: run_sizes(sizes, events=args.events, rate=args.rate,
                                       idle_seconds=args.idle,
                                       election_timeout=args.election_timeout,
                                       burst=args.burst))
    write_result(args.name, {"sizes": sizes, "events": args.events, "rate": args.rate,
                             "burst": args.burst,
                             "idle_seconds": args.idle,
                             "election_timeout": args.election_timeout, "rows": rows},
                 source="bench/scale.py: N whole nodes on the in-memory bus, one process")


if __name__ == "__main__":
    main()
