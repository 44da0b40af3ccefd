"""The processes `llama_rpc.py` runs, one per rank or relay, each started by it inside a
network namespace and pinned to one core. Run as a script with `--role`:

    head     a `LlamaCppEngine` (whole, or the head of a 2-rank split): reads one JSON
             request a line on stdin and answers each with its timings and text
    device   a device server: `LlamaDeviceServer` on loopback (the production path) or
             `rpc_lib.serve_device` on a namespace address (dialled directly, no relay)
    relay    the members-only TLS relay in front of a loopback device server
    forward  the head node's loopback forwarder to that relay
    count    a plain TCP proxy that counts the bytes and round trips crossing it

Each prints one line starting with `BENCH ` holding JSON when it is ready, and leaves
when its stdin ends. ggml prints to stdout too: only `BENCH ` lines are read.
"""

import argparse
import json
import multiprocessing
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
from skulk.worker.engines.llama_cpp import rpc_lib
from skulk.worker.engines.llama_cpp.device_server import LlamaDeviceServer
from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.rpc_relay import RelayLoop

MARK = "BENCH "
LAYERS = 30
CONTEXT_TOKENS = 2048
LISTEN_SECONDS = 20.0


def say(value: dict[str, Any]) -> None:
    """One line for `llama_rpc.py`."""
    sys.stdout.write(MARK + json.dumps(value) + "\n")
    sys.stdout.flush()


def host_port(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return host, int(port)


def link_counters() -> tuple[int, int]:
    """Bytes received and sent so far on this namespace's `eth0` (0, 0 outside one)."""
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, fields = line.partition(":")
        if name.strip() == "eth0":
            values = fields.split()
            return int(values[0]), int(values[8])
    return 0, 0


def make_members(authority: Path, data_dirs: list[Path]) -> None:
    """Certify each data dir's node by one cluster authority (before the relays start:
    the authority is made on first use, and two processes would race to make it)."""
    for data_dir in data_dirs:
        anyio.run(make_member, authority, data_dir)


def share_libllamas_ggml() -> bool:
    """Make `rpc_lib` register servers in the ggml libllama uses; True if it did not.

    llama-cpp-python's wheel ships `libggml.so` as a copy of `libggml.so.0`, not a link.
    libllama loads the `.so.0`; `rpc_lib` opens the `.so`, a second ggml with a registry
    of its own, so the servers it registers are never seen and every layer stays on the
    head. Opening the `.so.0` files shares libllama's. (A bug in src/, reported.)"""
    folder = rpc_lib.library_dir()
    plain, versioned = folder / "libggml.so", folder / "libggml.so.0"
    if plain.exists() and versioned.exists() and not plain.samefile(versioned):
        rpc_lib._SUFFIX = ".so.0"
        return True
    return False


def run_head(model: str, rpc_server: str | None) -> None:
    # llama-cpp-python gives prefill `multiprocessing.cpu_count()` threads whatever
    # n_threads says (the engine does not pass n_threads_batch); on a rank pinned to one
    # core that is two threads on one core. Count the cores this process may use instead.
    multiprocessing.cpu_count = lambda: len(os.sched_getaffinity(0))
    worked_around = False
    if rpc_server is None:
        config = EngineConfig(model_path=model, context_token_limit=CONTEXT_TOKENS,
                              n_threads=1, end_layer=LAYERS)
    else:
        half = LAYERS // 2
        config = EngineConfig(model_path=model, context_token_limit=CONTEXT_TOKENS,
                              n_threads=1, world_size=2, rank=0, end_layer=half,
                              options={"rpc_servers": rpc_server,
                                       "rpc_layers": f"{half},{LAYERS - half}"})
        worked_around = share_libllamas_ggml()
    started = time.perf_counter()
    engine = LlamaCppEngine(config)
    engine.load()
    engine.warm_up()
    say({"ready": True, "load_seconds": time.perf_counter() - started,
         "worked_around": worked_around})
    for line in sys.stdin:
        request = json.loads(line)
        say(generate_once(engine, request["prompt"], request["max_tokens"]))


def generate_once(engine: LlamaCppEngine, prompt: str, max_tokens: int) -> dict[str, Any]:
    """Time one greedy generation: to the first chunk with text, then to the last token;
    the link's bytes are read at the first and last token (not while decoding)."""
    params = GenerationParams(model_id=ModelId("smollm2-135m"), max_tokens=max_tokens,
                              messages=[ChatMessage(role="user", content=prompt)],
                              temperature=0.0)
    text: list[str] = []
    first = last = 0.0
    tokens_after_first = 0
    at_first = (0, 0)
    started = time.perf_counter()
    for chunk in engine.generate(params):
        now = time.perf_counter()
        text.append(chunk.text)
        if not first and chunk.text:
            first = now
            at_first = link_counters()
        elif first and chunk.token_ids:
            last = now
            tokens_after_first += len(chunk.token_ids)
    at_last = link_counters()
    return {"ttft": first - started, "decode_seconds": last - first,
            "tokens_after_first": tokens_after_first, "text": "".join(text),
            "decode_rx_bytes": at_last[0] - at_first[0],
            "decode_tx_bytes": at_last[1] - at_first[1]}


def run_device(listen: str, cache_dir: str) -> None:
    host, port = host_port(listen)
    if host == "127.0.0.1":  # the production class, which only listens on loopback
        LlamaDeviceServer(EngineConfig(
            model_path="", context_token_limit=CONTEXT_TOKENS, n_threads=1, world_size=2,
            rank=1, options={"rpc_listen": listen, "rpc_cache_dir": cache_dir})).load()
    else:
        threading.Thread(target=rpc_lib.serve_device, args=(listen, cache_dir, 1),
                         daemon=True).start()
        wait_listening(host, port)
    say({"ready": True})
    sys.stdin.read()


def wait_listening(host: str, port: int) -> None:
    deadline = time.monotonic() + LISTEN_SECONDS
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"no device server listened on {host}:{port}")


def run_relay(listen: str, target: str, data_dir: Path) -> None:
    tls = TrustFiles(data_dir).tls_files()
    relay = RelayLoop().serve(host_port(listen), host_port(target), tls, lambda node: False)
    say({"ready": True, "port": relay.port})
    sys.stdin.read()


def run_forward(remote: str, data_dir: Path, peer_dir: Path) -> None:
    tls = TrustFiles(data_dir).tls_files()
    peer = load_or_create_identity(peer_dir).node_id
    forwarder = RelayLoop().forward(host_port(remote), tls, peer)
    say({"ready": True, "endpoint": forwarder.endpoint})
    sys.stdin.read()


class TurnCounter:
    """Payload bytes each way, and how many times the far side answered after the near
    side spoke: the round trips the head waited for (TCP segmentation does not change
    it, since only a change of direction counts)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[int, str] = {}
        self.answers = 0
        self.bytes = {"to_device": 0, "to_head": 0}

    def saw(self, link: int, direction: str, size: int) -> None:
        with self._lock:
            self.bytes[direction] += size
            if direction == "to_head" and self._last.get(link) == "to_device":
                self.answers += 1
            self._last[link] = direction

    def report(self) -> dict[str, int]:
        with self._lock:
            return {"answers": self.answers, **self.bytes}


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
            sink.close()

    def accept() -> None:
        link = 0
        while True:
            near, _ = listener.accept()
            far = socket.create_connection(host_port(remote))
            for end in (near, far):
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link += 1
            for args in ((link, near, far, "to_device"), (link, far, near, "to_head")):
                threading.Thread(target=pipe, args=args, daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    say({"ready": True, "endpoint": f"127.0.0.1:{listener.getsockname()[1]}"})
    for _ in sys.stdin:  # each line asks for the counts so far
        say(counter.report())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", required=True,
                        choices=["head", "device", "relay", "forward", "count"])
    parser.add_argument("--model")
    parser.add_argument("--rpc-server", help="head: the device server to offload to")
    parser.add_argument("--listen")
    parser.add_argument("--target", help="relay: the device server's loopback endpoint")
    parser.add_argument("--remote", help="forward, count: where links go on to")
    parser.add_argument("--cache-dir", default=tempfile.gettempdir())
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--peer-dir", type=Path, help="forward: the relay node's data dir")
    args = parser.parse_args()
    if args.role == "head":
        run_head(args.model, args.rpc_server)
    elif args.role == "device":
        run_device(args.listen, args.cache_dir)
    elif args.role == "relay":
        run_relay(args.listen, args.target, args.data_dir)
    elif args.role == "forward":
        run_forward(args.remote, args.data_dir, args.peer_dir)
    else:
        run_count(args.remote)


if __name__ == "__main__":
    main()
