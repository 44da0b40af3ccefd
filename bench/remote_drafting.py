"""Two stand-in nodes for benchmarking the remote drafter: a drafting node that answers
draft queries with Skulk's drafting service, and the verifier's node, whose Zenoh session
the runner connects to and which routes its queries on (the path a runner's queries take
in a cluster). Each is its own process on 127.0.0.1.

    with remote_drafting() as options:  # engine options for drafter="remote"
        ...

Run as a script, it is one of the two nodes (`--role drafter|relay`).
"""

import argparse
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from skulk.routing.zenoh_transport import ZenohQueryClient, ZenohTransport  # noqa: E402
from skulk.shared.types.drafting import DraftQuery  # noqa: E402
from skulk.shared.types.ids import TaskId  # noqa: E402
from skulk.shared.types.wire import to_msgpack  # noqa: E402
from skulk.testing.ports import free_port  # noqa: E402
from skulk.worker.draft_service import DraftService  # noqa: E402

KEY = "skulk/bench/drafter/drafting-node"
READY_SECONDS = 30.0


@contextmanager
def remote_drafting() -> Iterator[dict[str, str]]:
    """Start both nodes; the engine options that make a runner draft through them."""
    drafter_port, relay_port = free_port(), free_port()
    script = str(Path(__file__).resolve())
    with ExitStack() as stack:
        for role, args in [("drafter", [f"--listen={drafter_port}"]),
                           ("relay", [f"--listen={relay_port}",
                                      f"--connect={drafter_port}"])]:
            process = subprocess.Popen([sys.executable, script, "--role", role, *args],
                                       stdin=subprocess.PIPE)
            stack.callback(_stop, process)
        relay = f"tcp/127.0.0.1:{relay_port}"
        _wait_for_answers(relay)
        yield {"drafter": "remote", "drafter_key": KEY, "cluster_connect": relay}


def _stop(process: "subprocess.Popen[bytes]") -> None:
    assert process.stdin is not None
    process.stdin.close()  # the node's signal to leave
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_for_answers(relay: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    query = to_msgpack(DraftQuery(request_id=TaskId("ready?"), context=[1, 2, 1], limit=1))
    while time.monotonic() < deadline:
        try:
            client = ZenohQueryClient([relay])
        except Exception:  # noqa: BLE001  (the relay is not listening yet)
            time.sleep(0.2)
            continue
        try:
            while time.monotonic() < deadline:
                if client.query(KEY, query, 1.0) is not None:
                    return
                time.sleep(0.2)
        finally:
            client.close()
    raise RuntimeError(f"the drafting node did not answer through {relay} within "
                       f"{READY_SECONDS:.0f} s")


async def _serve(role: str, listen: int, connect: int | None) -> None:
    transport = await ZenohTransport.open(
        listen=[f"tcp/127.0.0.1:{listen}"],
        connect=[] if connect is None else [f"tcp/127.0.0.1:{connect}"])
    if role == "drafter":
        transport.answer(KEY, DraftService().handle)
    try:
        await anyio.to_thread.run_sync(sys.stdin.read)  # until the benchmark closes stdin
    finally:
        await transport.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=["drafter", "relay"], required=True)
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--connect", type=int)
    args = parser.parse_args()
    anyio.run(_serve, args.role, args.listen, args.connect)


if __name__ == "__main__":
    main()
