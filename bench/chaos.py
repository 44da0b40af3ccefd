"""Chaos soak: a cluster of real `skulk run` processes that loses a node every 15-30 s.

    .venv/bin/python bench/chaos.py                    # 4 nodes, 10 minutes
    .venv/bin/python bench/chaos.py --minutes 3 --nodes 3 --seed 7

The nodes join with a token over mutual TLS (the first makes the cluster; the others
`--join` it). Every `--kill-every` seconds one node gets SIGKILL (half the time the master,
when that is not the node the clients are using), and comes back a few seconds later with
`--peer` and no token, as a rebooted machine does. Meanwhile clients stream greedy answers
(llama.cpp with `llama_cpp.shared_kv=off`, so greedy text is bit-identical) through a node
that is not about to be killed, and every node's `/cluster` is polled twice a second.

Reported: kills (of the master), requests finished identical / different / failed against
the text the quiet cluster gave, the longest gap a client saw between two pieces of a
stream (or before the first), seconds during which two live nodes each said they were the
master, and the longest time live nodes named different masters (an election round moving
through the cluster). Targets: 0 failed, 0 different, 0 s of two masters. The partition
soak (`--partitions`) is in bench/chaos_partitions.py.
"""

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.chaos_watch import ClusterWatch  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

MODEL = "smollm2-135m"
PROMPTS = ["Count from 1 to 20, one number per line.",
           "Name five fruits, one per line.",
           "Write one sentence about the sea."]
NODE_FLAGS = ("--threads", "1", "--engine-option", "llama_cpp.shared_kv=off")
LONG_GAP_S = 5.0


@dataclass(frozen=True)
class SoakPlan:
    nodes: int = 4
    seconds: float = 600.0
    kill_every: tuple[float, float] = (15.0, 30.0)
    down_for: tuple[float, float] = (2.0, 6.0)
    clients: int = 2
    max_tokens: int = 40
    seed: int = 0
    quiet_seconds: float = 30.0  # the baseline: the same clients before any kill
    kills: int | None = None  # end after this many kills, if before `seconds`


@dataclass
class SoakReport:
    plan: SoakPlan
    kills: int = 0
    master_kills: int = 0
    requests: int = 0
    identical: int = 0
    different: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)  # the first few, with their reason
    longest_gap_s: float = 0.0
    quiet_longest_gap_s: float = 0.0  # the same clients on the quiet cluster
    long_gaps: list[str] = field(default_factory=list)  # the first few over LONG_GAP_S
    two_masters_s: float = 0.0
    longest_disagreement_s: float = 0.0
    polls: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (f"{self.kills} kills ({self.master_kills} of the master) in "
                f"{self.seconds:.0f} s; {self.requests} requests: {self.identical} "
                f"identical, {self.different} different, {self.failed} failed; longest "
                f"client gap {self.longest_gap_s:.2f} s (quiet cluster: "
                f"{self.quiet_longest_gap_s:.2f} s); two masters "
                f"{self.two_masters_s:.1f} s; longest disagreement "
                f"{self.longest_disagreement_s:.1f} s over {self.polls} polls")


class ChaosNode:
    """One machine of the soak: its ports and data stay when it is killed and restarted."""

    def __init__(self, root: Path, index: int, namespace: str) -> None:
        self.name = f"n{index}"
        self.data_dir = root / self.name
        self.namespace = namespace
        self.process: NodeProcess | None = None
        self.node_id = ""
        self._ports: tuple[int, int] | None = None

    @property
    def up(self) -> bool:
        return self.process is not None and self.process.process is not None \
            and self.process.process.poll() is None

    @property
    def url(self) -> str:
        assert self.process is not None
        return self.process.url

    @property
    def transport(self) -> str:
        assert self._ports is not None
        return f"tcp/127.0.0.1:{self._ports[1]}"

    def start(self, *args: str) -> None:
        process = NodeProcess(self.data_dir, "--namespace", self.namespace, *NODE_FLAGS,
                              *args)
        if self._ports is None:
            self._ports = (process.api_port, process.transport_port)
        process.api_port, process.transport_port = self._ports
        process.url = f"http://127.0.0.1:{process.api_port}"
        self.process = process.start()
        self.node_id = process.node_id()

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()


class ChaosCluster:
    def __init__(self, root: Path, count: int) -> None:
        namespace = f"chaos-{time.monotonic_ns()}"
        self.nodes = [ChaosNode(root, index, namespace) for index in range(count)]

    def form(self, *first_flags: str) -> None:
        """The first node makes the cluster; the rest join it with its token."""
        first = self.nodes[0]
        first.start(*first_flags)
        token = subprocess.run(
            [sys.executable, "-m", "skulk.cli.main", "cluster", "token", "--data-dir",
             str(first.data_dir)], capture_output=True, text=True, check=True,
            timeout=60).stdout.strip()
        for node in self.nodes[1:]:
            node.start("--join", token, "--peer", first.transport)
        assert first.process is not None
        first.process.wait_until(lambda: self.agreed_master() is not None, 60,
                                 "one master every node follows")

    def restart(self, node: ChaosNode) -> None:
        peers = [arg for other in self.nodes if other is not node and other.up
                 for arg in ("--peer", other.transport)]
        node.start(*peers)

    def up(self) -> list[ChaosNode]:
        return [node for node in self.nodes if node.up]

    def agreed_master(self) -> str | None:
        """The master every live node follows and counts all live nodes under, if any."""
        masters = set()
        for node in self.up():
            view = httpx.get(f"{node.url}/cluster", timeout=5).json()
            if sum(n["alive"] for n in view["nodes"]) != len(self.up()):
                return None
            masters.add(view["master_node_id"])
        return masters.pop() if len(masters) == 1 else None

    def stop(self) -> None:
        for node in self.nodes:
            if node.up:
                assert node.process is not None
                node.process.stop()


def stream_once(url: str, prompt: str, max_tokens: int) -> tuple[str, float, str | None]:
    """The streamed text, the longest wait for a piece, and an error (None if it ended
    well)."""
    body = {"model": MODEL, "max_tokens": max_tokens, "temperature": 0.0, "stream": True,
            "messages": [{"role": "user", "content": prompt}]}
    pieces: list[str] = []
    longest = 0.0
    last = time.monotonic()
    try:
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body,
                          timeout=180) as response:
            if response.status_code != 200:
                return "", 0.0, f"HTTP {response.status_code}: {response.read()[:300]!r}"
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                now = time.monotonic()
                longest, last = max(longest, now - last), now
                event = json.loads(line[6:])
                if "error" in event:
                    return "".join(pieces), longest, f"stream error: {event['error']}"
                for choice in event.get("choices", []):
                    pieces.append(choice.get("delta", {}).get("content") or "")
    except httpx.HTTPError as error:
        return "".join(pieces), longest, f"{type(error).__name__}: {error}"
    return "".join(pieces), longest, None


class Clients:
    """Clients streaming through any live node but the one marked for the next kill."""

    def __init__(self, cluster: ChaosCluster, plan: SoakPlan, reference: dict[str, str],
                 report: SoakReport) -> None:
        self._cluster = cluster
        self._plan = plan
        self._reference = reference
        self._report = report
        self._lock = threading.Lock()
        self.avoid: ChaosNode | None = None
        self._entries: dict[int, ChaosNode] = {}  # client -> the node it streams through
        self._stopping = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(index,), daemon=True)
                         for index in range(plan.clients)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(240)

    def in_use(self) -> set[str]:
        with self._lock:
            return {node.name for node in self._entries.values()}

    def _entry(self, index: int) -> ChaosNode | None:
        with self._lock:
            candidates = [n for n in self._cluster.up() if n is not self.avoid]
            if not candidates:
                return None
            node = candidates[index % len(candidates)]
            self._entries[index] = node
            return node

    def _run(self, index: int) -> None:
        turn = 0
        while not self._stopping.is_set():
            node = self._entry(index)
            if node is None:
                time.sleep(0.5)
                continue
            prompt = PROMPTS[(index + turn) % len(PROMPTS)]
            turn += 1
            text, gap, error = stream_once(node.url, prompt, self._plan.max_tokens)
            with self._lock:
                self._entries.pop(index, None)
                report = self._report
                report.requests += 1
                report.longest_gap_s = max(report.longest_gap_s, gap)
                if gap > LONG_GAP_S and len(report.long_gaps) < 10:
                    report.long_gaps.append(f"{time.strftime('%H:%M:%S')} through "
                                            f"{node.name}: {gap:.1f} s")
                if error is not None:
                    report.failed += 1
                    if len(report.failures) < 10:
                        report.failures.append(f"through {node.name}: {error}")
                elif text == self._reference[prompt]:
                    report.identical += 1
                else:
                    report.different += 1
                    if len(report.failures) < 10:
                        report.failures.append(f"through {node.name}: different text "
                                               f"{text!r}")


def reference_texts(cluster: ChaosCluster, max_tokens: int) -> dict[str, str]:
    """What the quiet cluster answers each prompt (waiting for its first instance)."""
    entry = cluster.nodes[-1]
    texts = {}
    for prompt in PROMPTS:
        for _ in range(3):  # the first request places the model
            text, _, error = stream_once(entry.url, prompt, max_tokens)
            if error is None:
                break
        if error is not None:
            raise RuntimeError(f"the quiet cluster failed to answer: {error}")
        texts[prompt] = text
    return texts


def soak(root: Path, plan: SoakPlan,
         log: Callable[[str], None] = lambda line: print(line, flush=True)) -> SoakReport:
    chooser = random.Random(plan.seed)
    report = SoakReport(plan=plan)
    cluster = ChaosCluster(root, plan.nodes)
    watch = ClusterWatch(lambda: [(n.node_id, n.url) for n in cluster.up()])
    try:
        cluster.form()
        clients = Clients(cluster, plan, reference_texts(cluster, plan.max_tokens), report)
        log(f"formed {plan.nodes} nodes; reference texts taken")
        watch.start()
        clients.start()
        time.sleep(plan.quiet_seconds)
        report.quiet_longest_gap_s, report.longest_gap_s = report.longest_gap_s, 0.0
        log(f"quiet cluster: {report.requests} requests, longest gap "
            f"{report.quiet_longest_gap_s:.2f} s")
        started = time.monotonic()
        while time.monotonic() - started < plan.seconds and (
                plan.kills is None or report.kills < plan.kills):
            target = choose_target(cluster, watch.latest_master(), chooser)
            clients.avoid = target
            time.sleep(chooser.uniform(*plan.kill_every))
            if target is None or target.name in clients.in_use():
                continue  # a client still streams through it (rare): skip this kill
            was_master = watch.latest_master() == target.node_id
            target.kill()
            report.kills += 1
            report.master_kills += was_master
            log(f"{time.strftime('%H:%M:%S')} {time.monotonic() - started:6.1f} s: "
                f"killed {target.name}"
                f"{' (the master)' if was_master else ''}")
            time.sleep(chooser.uniform(*plan.down_for))
            cluster.restart(target)
            clients.avoid = None
        clients.stop()
        report.seconds = time.monotonic() - started
    finally:
        watch.stop()
        cluster.stop()
    report.polls = watch.polls
    report.two_masters_s = watch.two_masters_seconds
    report.longest_disagreement_s = watch.longest_disagreement_seconds
    return report


def choose_target(cluster: ChaosCluster, master_id: str | None, chooser: random.Random
                  ) -> ChaosNode | None:
    """Half the time the master, else any other live node; never the last node standing."""
    live = cluster.up()
    if len(live) < 2:
        return None
    master = next((n for n in live if n.node_id == master_id), None)
    if master is not None and chooser.random() < 0.5:
        return master
    return chooser.choice([n for n in live if n is not master] or live)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--kill-every", type=float, nargs=2, default=(15.0, 30.0))
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    plan = SoakPlan(nodes=args.nodes, seconds=args.minutes * 60,
                    kill_every=tuple(args.kill_every), clients=args.clients, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="skulk-chaos-") as root:
        report = soak(Path(root), plan)
    print(report.summary())
    for failure in report.failures:
        print("  ", failure)
    for gap in report.long_gaps:
        print("   gap", gap)
    from bench.results import write_result
    write_result("chaos", asdict(report), source="bench/chaos.py")
    return 0 if report.failed == report.different == 0 and report.two_masters_s == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
