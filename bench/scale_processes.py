"""The control plane with real node processes on Zenoh, as many as one machine holds.

    .venv/bin/python bench/scale_processes.py            # N = 4, 8, 16, 24
    .venv/bin/python bench/scale_processes.py --quick    # N = 4, 8 (about a minute)
    .venv/bin/python bench/scale_processes.py --sizes 12 --idle 20

bench/scale.py runs N whole nodes on the in-memory bus in one process, to 200; this runs N
`skulk run` processes (worker off, API on to watch them) on 127.0.0.1, each given every
other's transport endpoint, in one secure cluster. For each N:

- start: all N launched at once -> every API answers (`api_up_seconds`: interpreter and
  imports, N processes sharing this machine's cores) -> one master that every node names,
  all N alive in every node's view (`formation_seconds`, from the launch, and
  `formation_after_api_seconds`, from the last API up);
- idle: `--idle` seconds of nothing: each process's CPU per second (`idle_cpu_ms_per_node_
  second`, median and max) and resident memory;
- failover: the master gets SIGKILL -> one new master that every survivor names, N - 1
  alive in every view (`failover_seconds`).

Agreement is read from each node's `GET /cluster` every `POLL_SECONDS`, so times are
that coarse (and the polling costs the nodes a little CPU of its own).
"""

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

from skulk.testing.cluster_trust import make_member  # noqa: E402

FULL_SIZES = (4, 8, 16, 24)
QUICK_SIZES = (4, 8)
POLL_SECONDS = 0.2


def _views(nodes: list[NodeProcess]) -> list[dict[str, Any]] | None:
    """Every node's `/cluster`, read concurrently; None if one does not answer."""
    def read(node: NodeProcess) -> dict[str, Any] | None:
        try:
            reply = httpx.get(node.url + "/cluster", timeout=5.0)
        except httpx.TransportError:
            return None
        view: dict[str, Any] | None = reply.json() if reply.status_code == 200 else None
        return view

    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        views = list(pool.map(read, nodes))
    return None if any(view is None for view in views) else views  # type: ignore[return-value]


def _agreed_master(nodes: list[NodeProcess], gone: str | None) -> str | None:
    """The master every node names (not `gone`), with all of `nodes` alive in every
    view."""
    views = _views(nodes)
    if views is None:
        return None
    masters = {view["master_node_id"] for view in views}
    if len(masters) != 1 or None in masters or gone in masters:
        return None
    if any(sum(x["alive"] for x in view["nodes"]) != len(nodes) for view in views):
        return None
    master: str = next(iter(masters))
    return master


def _wait_master(nodes: list[NodeProcess], timeout: float, gone: str | None = None) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        master = _agreed_master(nodes, gone)
        if master is not None:
            return master
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"no master agreed by {len(nodes)} nodes in {timeout} s")


def _launch(root: Path, n: int) -> list[NodeProcess]:
    """N nodes of one namespace and one authority, each told every other's endpoint."""
    namespace = f"scale-{time.monotonic_ns()}"
    nodes = [NodeProcess(root / f"n{i:02d}", "--namespace", namespace, "--no-worker",
                         authority=root / "authority") for i in range(n)]
    # Each node's transport port is chosen when it is made, so the peers are added after.
    for node in nodes:
        for other in nodes:
            if other is not node:
                node._extra_args += ["--peer", f"tcp/127.0.0.1:{other.transport_port}"]
    return nodes


def _cpu_seconds(node: NodeProcess) -> float:
    assert node.process is not None
    times = psutil.Process(node.process.pid).cpu_times()
    return float(times.user + times.system)


def measure(n: int, idle_seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="skulk-scale-processes-") as root:
        nodes = _launch(Path(root), n)
        try:
            # The authority is made once, before the nodes' certificates are issued at once.
            anyio.run(make_member, Path(root) / "authority", nodes[0].data_dir)
            launched = time.monotonic()
            with ThreadPoolExecutor(max_workers=n) as pool:
                list(pool.map(lambda node: node.start(timeout=60.0 + 10 * n), nodes))
            api_up = time.monotonic()
            master_id = _wait_master(nodes, timeout=60.0 + 5 * n)
            formed = time.monotonic()

            time.sleep(2.0)  # the readings and agreements that follow an election
            before = [_cpu_seconds(node) for node in nodes]
            time.sleep(idle_seconds)
            idle_ms = sorted(1000 * (_cpu_seconds(node) - cpu) / idle_seconds
                             for node, cpu in zip(nodes, before, strict=True))
            rss_mib = [psutil.Process(node.process.pid).memory_info().rss / (1 << 20)
                       for node in nodes if node.process is not None]

            master = next(node for node in nodes if node.node_id() == master_id)
            killed_at = time.monotonic()
            master.kill()
            survivors = [node for node in nodes if node is not master]
            _wait_master(survivors, timeout=60.0 + 5 * n, gone=master_id)
            failover = time.monotonic() - killed_at
        finally:
            for node in nodes:
                if node.process is not None and node.process.poll() is None:
                    node.process.kill()
                    node.process.wait()
    return {
        "nodes": n,
        "api_up_seconds": round(api_up - launched, 2),
        "formation_seconds": round(formed - launched, 2),
        "formation_after_api_seconds": round(formed - api_up, 2),
        "failover_seconds": round(failover, 2),
        "idle_cpu_ms_per_node_second_median": round(statistics.median(idle_ms), 2),
        "idle_cpu_ms_per_node_second_max": round(idle_ms[-1], 2),
        "rss_mib_per_node_median": round(statistics.median(rss_mib), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 4, 8 only")
    parser.add_argument("--sizes", type=int, nargs="+", help="the cluster sizes to run")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle measured")
    args = parser.parse_args()
    sizes = args.sizes or list(QUICK_SIZES if args.quick else FULL_SIZES)
    rows = []
    for n in sizes:
        try:
            row = measure(n, args.idle)
        except (TimeoutError, AssertionError) as error:
            row = {"nodes": n, "error": (str(error) or repr(error)).splitlines()[0]}
        print(" ".join(f"{key}={value}" for key, value in row.items()), flush=True)
        rows.append(row)
    write_result("scale_processes", {"sizes": sizes, "idle_seconds": args.idle, "rows": rows},
                 source="bench/scale_processes.py: N `skulk run` processes on Zenoh, "
                        "one machine")


if __name__ == "__main__":
    main()
