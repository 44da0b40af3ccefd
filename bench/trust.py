"""What authentication costs: signed messages and TLS links, each beside its baseline.

- indexing: events/s the master indexes and a replica receives through the router, with
  every event signed and verified under a node certificate, vs. the same path with plain
  msgpack (no envelope, as before signing existed). In one process, on the in-memory bus.
- time to first token: a chat taken by node B and served by node A's runner (the request
  and its tokens cross the cluster links twice), two real `skulk run` processes with
  mutual TLS, vs. the same pair started with `--insecure`. Medians of the repeats.

    .venv/bin/python bench/trust.py [--events 20000] [--repeats 9]
"""

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.cluster import NoLog  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402


async def indexing_rate(count: int, signed: bool) -> float:
    from skulk.master.master import Master
    from skulk.master.settings import MasterInbox
    from skulk.models.catalog import ModelCatalog
    from skulk.node_identity import load_or_create_identity
    from skulk.routing import topics
    from skulk.routing.memory import MemoryBus, MemoryTransport
    from skulk.routing.router import Router
    from skulk.shared.telemetry_view import TelemetryView
    from skulk.shared.types.commands import CommandEnvelope
    from skulk.shared.types.events import IndexedBatch, LocalEvent, LocalEventBatch, TaskDeleted
    from skulk.shared.types.ids import NodeId, TaskId
    from skulk.shared.types.wire import from_msgpack, to_msgpack
    from skulk.testing.channels import SendThrough
    from skulk.testing.cluster_trust import make_member
    from skulk.trust.setup import prepare_trust

    bus = MemoryBus()
    received = 0
    done = anyio.Event()
    with tempfile.TemporaryDirectory() as root:
        routers = []
        for name in ("master", "replica"):
            await make_member(Path(root) / "authority", Path(root) / name)
            trust = await prepare_trust(Path(root) / name,
                                        load_or_create_identity(Path(root) / name),
                                        join=None, peers=[], cluster_name="bench")
            routers.append(Router(MemoryTransport(bus), namespace="bench",
                                  signer=trust.signer, verifier=trust.verifier))
    master_router, replica_router = routers
    node_id = master_router.node_id
    plain = MemoryTransport(bus)
    key = master_router.key(topics.GLOBAL_EVENTS)

    async def publish(batch: IndexedBatch) -> None:
        if signed:
            await master_router.publish(topics.GLOBAL_EVENTS, batch)
        else:
            await plain.publish(key, to_msgpack(batch))

    _, commands = anyio.create_memory_object_stream[CommandEnvelope](math.inf)
    _, local_events = anyio.create_memory_object_stream[LocalEventBatch](math.inf)
    master = Master(node_id=node_id, catalog=ModelCatalog.builtin(Path(".")),
                    telemetry=TelemetryView(), event_log=NoLog(),
                    inbox=MasterInbox(commands=commands, local_events=local_events),
                    indexed=SendThrough(publish))
    events = [LocalEvent(origin=NodeId("w"), epoch="e", origin_seq=i,
                         event=TaskDeleted(task_id=TaskId(f"t{i}"))) for i in range(count)]

    async def receive_signed() -> None:
        nonlocal received
        async with replica_router.subscribe(topics.GLOBAL_EVENTS) as values:
            async for batch in values:
                received += len(batch.events)
                if received == count:
                    done.set()
                    return

    async def receive_plain() -> None:
        nonlocal received
        subscription = MemoryTransport(bus).subscribe(key)
        async for message in subscription:
            received += len(from_msgpack(IndexedBatch, message.payload).events)
            if received == count:
                done.set()
                return

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(receive_signed if signed else receive_plain)
        await anyio.wait_all_tasks_blocked()
        started = time.perf_counter()
        for local in events:
            await master.handle_local_event(local)
        await done.wait()
        elapsed = time.perf_counter() - started
    return count / elapsed


def first_token_seconds(url: str) -> float:
    body = {"model": "smollm2-135m", "messages": [{"role": "user", "content": "Say hi."}],
            "max_tokens": 8, "temperature": 0, "stream": True}
    started = time.perf_counter()
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=120) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            if line.startswith("data: ") and '"content":"' in line.replace(" ", ""):
                return time.perf_counter() - started
    raise AssertionError("no token came back")


def pair_first_token(repeats: int, insecure: bool) -> float:
    flags = ["--insecure"] if insecure else []
    with tempfile.TemporaryDirectory() as root:
        namespace = f"bench-{time.monotonic_ns()}"
        authority = None if insecure else Path(root) / "authority"
        serving = NodeProcess(Path(root) / "a", "--namespace", namespace, "--serve",
                              "smollm2-135m", "--no-auto-place", "-q", *flags,
                              authority=authority)
        taking = NodeProcess(Path(root) / "b", "--namespace", namespace, "--no-worker", "-q",
                             "--peer", f"tcp/127.0.0.1:{serving.transport_port}", *flags,
                             authority=authority)
        try:
            serving.start()
            taking.start()
            taking.wait_model_ready()
            for _ in range(3):
                first_token_seconds(taking.url)  # warm both paths up
            return statistics.median(first_token_seconds(taking.url) for _ in range(repeats))
        finally:
            taking.stop()
            serving.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    signed = anyio.run(indexing_rate, args.events, True)
    plain = anyio.run(indexing_rate, args.events, False)
    print(f"{'':40}{'trust':>10}{'baseline':>10}{'ratio':>8}")
    print(f"{'events indexed+received/s (signed / plain)':40}{signed:10.0f}{plain:10.0f}"
          f"{signed / plain:8.2f}")
    tls = pair_first_token(args.repeats, insecure=False) * 1000
    insecure = pair_first_token(args.repeats, insecure=True) * 1000
    print(f"{'chat TTFT ms across 2 nodes (TLS / insecure)':40}{tls:10.1f}{insecure:10.1f}"
          f"{tls / insecure:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
