"""Partition soak: real `skulk run` nodes on hosts made of network namespaces, cut into a
minority and a majority again and again, then healed.

    .venv/bin/python bench/chaos_partitions.py                 # 5 hosts, 6 rounds
    .venv/bin/python bench/chaos_partitions.py --hosts 3 --rounds 2 --quorum majority

Needs root and iproute2 (`skulk.testing.netns` says what is missing). Each round cuts a
random minority off (unicast dropped both ways; Zenoh notices when its lease runs out),
waits until each side follows one master of its own, places the bundled model through the
minority (a lasting change), heals, and waits until every node follows one master in one
session with one log (the same last index). Reported per round: seconds until both
sides settled, seconds from the heal until all agreed, and whether the minority's change
was kept (`--quorum available`: carried over to the majority's master, the instance is
there after the heal; `majority`: refused by the minority, never indexed).
"""

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.netns_hosts import NetnsCluster, available  # noqa: E402

SETTLE_SECONDS = 90.0
# A minority's changes reach the majority's master once its node follows that master.
CARRY_SECONDS = 30.0
MODEL = "smollm2-135m"


@dataclass
class RoundResult:
    minority: list[int]
    sides_settled_s: float
    healed_s: float
    minority_write: str  # "kept", "refused", or what went wrong


@dataclass
class PartitionReport:
    hosts: int
    quorum: str
    rounds: list[RoundResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        settled = [r.sides_settled_s for r in self.rounds]
        healed = [r.healed_s for r in self.rounds]
        return (f"{len(self.rounds)} partitions of {self.hosts} hosts ({self.quorum}): "
                f"sides settled in at most {max(settled, default=0):.1f} s, healed into "
                f"one master and one log in at most {max(healed, default=0):.1f} s; "
                f"minority writes {[r.minority_write for r in self.rounds]}; "
                f"{len(self.failures)} failure(s)")


def views(cluster: NetnsCluster, hosts: list[int]) -> list[dict[str, Any] | None]:
    return [cluster.request(h, "GET", "/cluster", timeout=5) for h in hosts]


def one_log(cluster: NetnsCluster) -> bool:
    """Every node follows one master in one session, at one last index."""
    hosts = list(range(cluster.count))
    if cluster.one_master(hosts) is None:
        return False
    states = [cluster.request(h, "GET", "/state", timeout=10) for h in hosts]
    if any(s is None for s in states):
        return False
    return len({(s["session"], s["last_event_applied_idx"]) for s in states}) == 1


def eventually(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def timed(cluster: NetnsCluster, predicate: Callable[[], bool], what: str) -> float:
    started = time.monotonic()
    cluster.wait(predicate, SETTLE_SECONDS, what)
    return time.monotonic() - started


def partition_round(cluster: NetnsCluster, number: int, chooser: random.Random,
                    quorum: str) -> RoundResult:
    hosts = list(range(cluster.count))
    minority = sorted(chooser.sample(hosts, chooser.randint(1, (cluster.count - 1) // 2)))
    majority = [h for h in hosts if h not in minority]
    cluster.network.partition(minority)
    settled = timed(cluster, lambda: cluster.one_master(minority) is not None
                    and cluster.one_master(majority) is not None, "each side's own master")
    status, text = cluster.request_status(minority[0], "POST", "/place_instance",
                                          {"model_id": MODEL})
    placed = json.loads(text).get("instance_id") if status == 201 else None
    cluster.network.heal_all()
    healed = timed(cluster, lambda: one_log(cluster), "one master and one log")
    kept = placed is not None and eventually(lambda: cluster.request(
        majority[0], "GET", f"/instance/{placed}", timeout=10) is not None, CARRY_SECONDS)
    if quorum == "majority":
        outcome = "refused" if placed is None else \
            f"status {status}, kept={kept}: a minority changed the log"
    else:
        outcome = "kept" if kept else f"status {status}: the minority's placement was lost"
    if kept:
        cluster.request(majority[0], "DELETE", f"/instance/{placed}", timeout=30)
    return RoundResult(minority, settled, healed, outcome)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--quorum", choices=["available", "majority"], default="available")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", metavar="DIR", help="keep the nodes' data and logs here")
    args = parser.parse_args()
    if (reason := available()) is not None:
        print(f"cannot run: {reason}")
        return 2
    chooser = random.Random(args.seed)
    report = PartitionReport(args.hosts, args.quorum)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="skulk-partitions-"))
    with NetnsCluster(args.hosts, root, extra_args=(
                "--quorum", args.quorum, "--threads", "1")) as cluster:
        cluster.wait(lambda: cluster.one_master(list(range(args.hosts))) is not None,
                     SETTLE_SECONDS, "one master")
        for number in range(args.rounds):
            try:
                result = partition_round(cluster, number, chooser, args.quorum)
            except AssertionError as error:
                report.failures.append(f"round {number}: {str(error)[:400]}")
                cluster.network.heal_all()
                continue
            report.rounds.append(result)
            print(f"round {number}: minority {result.minority}, sides "
                  f"{result.sides_settled_s:.1f} s, healed {result.healed_s:.1f} s, "
                  f"minority write {result.minority_write}", flush=True)
    print(report.summary())
    for failure in report.failures:
        print("  ", failure)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    from bench.results import write_result
    write_result("chaos_partitions", asdict(report), source="bench/chaos_partitions.py")
    bad = [r for r in report.rounds if r.minority_write not in ("kept", "refused")]
    return 0 if not report.failures and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
