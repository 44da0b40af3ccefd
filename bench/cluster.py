"""Cluster formation, failover and master indexing throughput, each beside its baseline.

    .venv/bin/python bench/cluster.py

- formation: 3 nodes until all agree on one master, vs. 1 node until it is its own master;
- failover: master killed → first successful chat on a survivor, vs. a cold one-node
  start → first successful chat (what restarting the cluster would cost instead);
- indexing: events/s the master indexes with its log on disk, vs. with no log at all.
"""

import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

from skulk.master.event_log import DEFAULT_SYNC_INTERVAL_SECONDS  # noqa: E402
from skulk.shared.types.events import IndexedEvent  # noqa: E402

CHAT = {"model": "smollm2-135m", "max_tokens": 4,
        "messages": [{"role": "user", "content": "Hi"}]}


def wait(predicate: Callable[[], bool], timeout: float = 120.0) -> float:
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise TimeoutError("the cluster did not get there in time")
        time.sleep(0.02)
    return time.monotonic() - started


def agreed(nodes: list[NodeProcess]) -> bool:
    try:
        views = [n.cluster() for n in nodes]
    except (httpx.TransportError, ValueError):
        return False
    masters = {v["master_node_id"] for v in views}
    return len(masters) == 1 and None not in masters and all(
        sum(x["alive"] for x in v["nodes"]) == len(nodes) for v in views)


def chat_ok(node: NodeProcess) -> bool:
    try:
        return httpx.post(f"{node.url}/v1/chat/completions", json=CHAT,
                          timeout=60).status_code == 200
    except httpx.TransportError:
        return False


def trio(root: Path) -> list[NodeProcess]:
    namespace = f"bench-{time.monotonic_ns()}"
    first = NodeProcess(root / "a", "--namespace", namespace, "-q")
    peers = ["--peer", f"tcp/127.0.0.1:{first.transport_port}"]
    second = NodeProcess(root / "b", "--namespace", namespace, "-q", *peers)
    third = NodeProcess(root / "c", "--namespace", namespace, "-q", *peers,
                        "--peer", f"tcp/127.0.0.1:{second.transport_port}")
    return [first, second, third]


def formation() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as root:
        lone = NodeProcess(Path(root) / "lone", "-q")
        started = time.monotonic()
        lone.start()
        wait(lambda: agreed([lone]))
        single = time.monotonic() - started
        lone.stop()
        nodes = trio(Path(root))
        started = time.monotonic()
        for node in nodes:
            node.start()
        wait(lambda: agreed(nodes))
        three = time.monotonic() - started
        for node in nodes:
            node.stop()
    return three, single


def failover() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as root:
        cold = NodeProcess(Path(root) / "cold", "-q")
        started = time.monotonic()
        cold.start()
        wait(lambda: chat_ok(cold))
        cold_start = time.monotonic() - started
        cold.stop()
        nodes = trio(Path(root))
        for node in nodes:
            node.start()
        wait(lambda: agreed(nodes))
        master_id = nodes[0].cluster()["master_node_id"]
        master = next(n for n in nodes if n.node_id() == master_id)
        httpx.post(f"{master.url}/place_instance", timeout=60,
                   json={"model_id": "smollm2-135m", "excluded_nodes": [master_id]})
        survivors = [n for n in nodes if n is not master]
        wait(lambda: chat_ok(survivors[0]))
        started = time.monotonic()
        master.kill()
        wait(lambda: chat_ok(survivors[0]) and chat_ok(survivors[1]))
        failover_time = time.monotonic() - started
        for node in survivors:
            node.stop()
    return failover_time, cold_start


class NoLog:
    """An event log that keeps nothing: the baseline of indexing with a log."""

    def append(self, event: "IndexedEvent") -> None:
        pass

    def compact(self, snapshot: "IndexedEvent") -> None:
        pass

    def read_range(self, start: int, end: int) -> "list[IndexedEvent]":
        return []


async def indexing_rate(log_dir: Path | None, count: int,
                        sync_interval: float | None = None) -> float:
    from skulk.master.event_log import DiskEventLog
    from skulk.master.master import Master
    from skulk.master.settings import MasterInbox
    from skulk.models.catalog import ModelCatalog
    from skulk.shared.telemetry_view import TelemetryView
    from skulk.shared.types.commands import CommandEnvelope
    from skulk.shared.types.events import IndexedBatch, LocalEvent, LocalEventBatch, TaskDeleted
    from skulk.shared.types.ids import NodeId, TaskId
    from skulk.testing.channels import SendThrough

    async def publish(batch: IndexedBatch) -> None:
        pass

    _, commands = anyio.create_memory_object_stream[CommandEnvelope](math.inf)
    _, local_events = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    log = DiskEventLog(log_dir, sync_interval=sync_interval) if log_dir else NoLog()
    master = Master(node_id=NodeId("bench"), catalog=ModelCatalog.builtin(Path(".")),
                    telemetry=TelemetryView(), event_log=log,
                    inbox=MasterInbox(commands=commands, local_events=local_events),
                    indexed=SendThrough(publish))
    events = [LocalEvent(origin=NodeId("w"), epoch="e", origin_seq=i,
                         event=TaskDeleted(task_id=TaskId(f"t{i}"))) for i in range(count)]
    started = time.perf_counter()
    for local in events:
        await master.handle_local_event(local)
    rate = count / (time.perf_counter() - started)
    if isinstance(log, DiskEventLog):
        log.close()
    return rate


def indexing_only() -> bool:
    return "--indexing-only" in sys.argv


def main() -> int:
    print(f"{'':34}{'skulk':>10}{'baseline':>10}{'ratio':>8}")
    payload: dict[str, object] = {}
    if not indexing_only():
        three, single = formation()
        print(f"{'formation s (3 nodes / 1 node)':34}{three:10.2f}{single:10.2f}"
              f"{three / single:8.2f}")
        moved, cold = failover()
        print(f"{'failover s (vs cold start)':34}{moved:10.2f}{cold:10.2f}"
              f"{moved / cold:8.2f}")
        payload["formation_s"] = {"three_nodes": three, "one_node": single}
        payload["master_failover_s"] = {"failover": moved, "cold_start": cold}
    rates = {}
    for name, interval in (("group", DEFAULT_SYNC_INTERVAL_SECONDS), ("every", 0.0),
                           ("never", None)):
        with tempfile.TemporaryDirectory() as log_dir:
            rates[name] = anyio.run(indexing_rate, Path(log_dir), 20_000, interval)
    in_memory = anyio.run(indexing_rate, None, 20_000)
    print(f"{'events indexed/s (disk / no log)':34}{rates['group']:10.0f}{in_memory:10.0f}"
          f"{rates['group'] / in_memory:8.2f}")
    print(f"{'  group commit vs no fsync':34}{rates['group']:10.0f}{rates['never']:10.0f}"
          f"{rates['group'] / rates['never']:8.2f}")
    print(f"{'  fsync every event vs no fsync':34}{rates['every']:10.0f}{rates['never']:10.0f}"
          f"{rates['every'] / rates['never']:8.2f}")
    payload["indexing_events_per_s"] = {**rates, "no_log": in_memory}
    write_result("cluster", payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
