"""The processes `llama_rpc.py` runs, one per rank or relay, each started by it inside a
network namespace and pinned to one core. Run as a script with `--role`:

    head     a `LlamaCppEngine` (whole, or the head of a 2-rank split): reads one JSON
             request a line on stdin and answers each with its timings and text
    device   a device server, `LlamaDeviceServer` (the production class) on a namespace
             address
    count    a plain TCP proxy that counts the bytes and round trips crossing it

A head and a device given `--data-dir` (a node's data dir, certified by the bench's
cluster authority) link as a secure cluster's runners do: TLS between members inside
ggml RPC's own sockets (`skulk.worker.rpc_channel`); without, plain TCP.

Each prints one line starting with `BENCH ` holding JSON when it is ready, and leaves
when its stdin ends. ggml prints to stdout too: only `BENCH ` lines are read.
"""

import argparse
import contextlib
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

from skulk.node_identity import load_or_create_identity
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.testing.cluster_trust import make_member
from skulk.trust.files import TrustFiles
from skulk.worker import rpc_channel
from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
from skulk.worker.engines.llama_cpp.device_server import LlamaDeviceServer
from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine
from skulk.worker.engines.protocol import EngineConfig

MARK = "BENCH "
LAYERS = 30
CONTEXT_TOKENS = 2048


def say(value: dict[str, Any]) -> None:
    """One line for `llama_rpc.py`."""
    sys.stdout.write(MARK + json.dumps(value) + "\n")
    sys.stdout.flush()


def host_port(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return host, int(port)


def cpu_seconds(pid: int) -> float:
    """CPU time process `pid`'s threads have used so far, to the nanosecond (the first
    field of each thread's schedstat; /proc/<pid>/stat counts 10 ms ticks, which over a
    run's few hundred tokens is ~0.015 ms a token, a tenth of a relay's CPU). A thread that
    has ended no longer counts: take differences over a span its threads live through."""
    return _schedstat_seconds(pid, 0)


def runqueue_seconds(pid: int) -> float:
    """How long process `pid`'s threads have waited so far, runnable, for a core (the
    second field of each thread's schedstat)."""
    return _schedstat_seconds(pid, 1)


def _schedstat_seconds(pid: int, field: int) -> float:
    """A field of the scheduler's statistics, in ns, summed over `pid`'s threads."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            total += int((task / "schedstat").read_text().split()[field])
    return total / 1e9


def wakes(pid: int) -> int:
    """How many times process `pid`'s threads have gone to sleep and been woken so far
    (voluntary context switches)."""
    woken = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError):
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    woken += int(line.split()[1])
    return woken


def readings(watched: dict[str, int]) -> dict[str, float]:
    """The link's byte counters, and the CPU time of this process (and of it inside the
    secure channel's hooks, when measured) and of `watched`, how long each waited for a
    core and how many times each was woken."""
    received, sent = link_counters()
    return {"rx_bytes": received, "tx_bytes": sent, "cpu_head": time.process_time(),
            "channel_head": rpc_channel.cpu_spent()[0],
            "channelsocket_head": rpc_channel.cpu_spent()[1],
            **{f"cpu_{name}": cpu_seconds(pid) for name, pid in watched.items()},
            "runq_head": runqueue_seconds(os.getpid()),
            **{f"runq_{name}": runqueue_seconds(pid) for name, pid in watched.items()},
            "wakes_head": wakes(os.getpid()),
            **{f"wakes_{name}": wakes(pid) for name, pid in watched.items()}}


def link_counters() -> tuple[int, int]:
    """Bytes received and sent so far on this namespace's `eth0` (0, 0 outside one)."""
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, fields = line.partition(":")
        if name.strip() == "eth0":
            values = fields.split()
            return int(values[0]), int(values[8])
    return 0, 0


def make_members(authority: Path, data_dirs: list[Path]) -> None:
    """Certify each data dir's node by one cluster authority (before the ranks start: the
    authority is made on first use, and two processes would race to make it)."""
    for data_dir in data_dirs:
        anyio.run(make_member, authority, data_dir)


def secure_options(data_dir: Path | None) -> dict[str, str]:
    """A runner's trust options as a node's DeviceLinks gives them (none: plain TCP); with
    them, the CPU inside the channel's hooks is counted."""
    if data_dir is None:
        return {}
    rpc_channel.measure_cpu()
    tls = TrustFiles(data_dir).tls_files()
    return {"rpc_ca_certificate": str(tls.ca_certificate),
            "rpc_certificate": str(tls.certificate), "rpc_private_key": str(tls.private_key)}


def run_head(model: str, rpc_server: str | None, watched: dict[str, int],
             data_dir: Path | None = None, peer_dir: Path | None = None) -> None:
    if rpc_server is None:
        config = EngineConfig(model_path=model, context_token_limit=CONTEXT_TOKENS,
                              n_threads=1, end_layer=LAYERS)
    else:
        half = LAYERS // 2
        config = EngineConfig(model_path=model, context_token_limit=CONTEXT_TOKENS,
                              n_threads=1, world_size=2, rank=0, end_layer=half,
                              options=LlamaCppOptions.parse({
                                  "rpc_servers": rpc_server,
                                  "rpc_layers": f"{half},{LAYERS - half}",
                                  **({} if peer_dir is None else {"rpc_peers": str(
                                      load_or_create_identity(peer_dir).node_id)}),
                                  **secure_options(data_dir)}))
    started = time.perf_counter()
    engine = LlamaCppEngine(config)
    engine.load()
    engine.warm_up()
    say({"ready": True, "load_seconds": time.perf_counter() - started})
    for line in sys.stdin:
        request = json.loads(line)
        say(generate_once(engine, request["prompt"], request["max_tokens"], watched))


def generate_once(engine: LlamaCppEngine, prompt: str, max_tokens: int,
                  watched: dict[str, int]) -> dict[str, Any]:
    """Time one greedy generation: to the first chunk with text, then to the last token.
    What the decode costs (`decode_*`: bytes on the link, CPU seconds of the head and of
    the `watched` processes) is read at the first and at the last token."""
    params = GenerationParams(model_id=ModelId("smollm2-135m"), max_tokens=max_tokens,
                              messages=[ChatMessage(role="user", content=prompt)],
                              temperature=0.0)
    text: list[str] = []
    first = last = 0.0
    tokens_after_first = 0
    at_first: dict[str, float] = {}
    started = time.perf_counter()
    for chunk in engine.generate(params):
        now = time.perf_counter()
        text.append(chunk.text)
        if not first and chunk.text:
            first = now
            at_first = readings(watched)
        elif first and chunk.token_ids:
            last = now
            tokens_after_first += len(chunk.token_ids)
    at_last = readings(watched)
    return {"ttft": first - started, "decode_seconds": last - first,
            "tokens_after_first": tokens_after_first, "text": "".join(text),
            **{f"decode_{key}": at_last[key] - at_first[key] for key in at_last}}


def run_device(listen: str, cache_dir: str, data_dir: Path | None) -> None:
    LlamaDeviceServer(EngineConfig(
        model_path="", context_token_limit=CONTEXT_TOKENS, n_threads=1, world_size=2,
        rank=1, options=LlamaCppOptions.parse({"rpc_listen": listen, "rpc_cache_dir": cache_dir,
                                               **secure_options(data_dir)}))).load()
    say({"ready": True})
    for _ in sys.stdin:  # each line asks for the CPU spent inside the channel so far
        inside, socket_calls, _ = rpc_channel.cpu_spent()
        say({"channel_cpu": inside, "channel_socket_cpu": socket_calls})


class TurnCounter:
    """Payload bytes and reads each way, and how many times the far side answered after
    the near side spoke: the round trips the head waited for (TCP segmentation does not
    change it, since only a change of direction counts). The reads are the sends as far
    as TCP kept them apart: a send on loopback is one segment, and two that follow each
    other closely may be read as one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[int, str] = {}
        self.answers = 0
        self.bytes = {"to_device": 0, "to_head": 0}
        self.reads = {"to_device": 0, "to_head": 0}

    def saw(self, link: int, direction: str, size: int) -> None:
        with self._lock:
            self.bytes[direction] += size
            self.reads[direction] += 1
            if direction == "to_head" and self._last.get(link) == "to_device":
                self.answers += 1
            self._last[link] = direction

    def report(self) -> dict[str, int]:
        with self._lock:
            return {"answers": self.answers, **self.bytes,
                    **{f"{direction}_reads": n for direction, n in self.reads.items()}}


def run_count(remote: str) -> None:
    counter = TurnCounter()
    listener = socket.create_server(("127.0.0.1", 0))

    def pipe(link: int, source: socket.socket, sink: socket.socket, direction: str) -> None:
        try:
            while data := source.recv(1 << 16):
                counter.saw(link, direction, len(data))  # before it can be answered
                sink.sendall(data)
        except OSError:
            pass
        finally:
            # Not close: the other direction's thread may be blocked reading `sink`, and
            # a close would wait for it; the end of this direction is what must pass on.
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def carry(link: int, near: socket.socket) -> None:
        with near, socket.create_connection(host_port(remote)) as far:
            for end in (near, far):
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            back = threading.Thread(target=pipe, args=(link, far, near, "to_head"))
            back.start()
            pipe(link, near, far, "to_device")
            back.join()

    def accept() -> None:
        link = 0
        while True:
            near, _ = listener.accept()
            link += 1
            threading.Thread(target=carry, args=(link, near), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    say({"ready": True, "endpoint": f"127.0.0.1:{listener.getsockname()[1]}"})
    for _ in sys.stdin:  # each line asks for the counts so far
        say(counter.report())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", required=True,
                        choices=["head", "device", "count"])
    parser.add_argument("--model")
    parser.add_argument("--rpc-server", help="head: the device server to offload to")
    parser.add_argument("--watch", default="",
                        help="head: name=pid,... of processes whose CPU time to report")
    parser.add_argument("--listen")
    parser.add_argument("--remote", help="count: where links go on to")
    parser.add_argument("--cache-dir", default=tempfile.gettempdir())
    parser.add_argument("--data-dir", type=Path,
                        help="head, device: this node's data dir (TLS between members)")
    parser.add_argument("--peer-dir", type=Path, help="head: the device node's data dir")
    args = parser.parse_args()
    if args.role == "head":
        watched = dict(item.split("=") for item in args.watch.split(",") if item)
        run_head(args.model, args.rpc_server,
                 {name: int(pid) for name, pid in watched.items()}, args.data_dir,
                 args.peer_dir)
    elif args.role == "device":
        run_device(args.listen, args.cache_dir, args.data_dir)
    else:
        run_count(args.remote)


if __name__ == "__main__":
    main()
