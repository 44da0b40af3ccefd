"""Skulk's patch to ggml RPC (tools/patches/ggml-rpc-one-send.patch), for real: a head
that offloads half the bundled GGUF's layers to a device server, through a proxy that
reads what crosses. Each decoded token must leave the head in one send holding its
inputs, its graph and the read of the result, and come back in one reply: each send
wakes the far end's thread (in Skulk's relays' time, the forwarder on the head's core:
bench/README.md, "cold wake-ups").

Needs the installed llama-cpp-python built with the tree's patches (`make install`
rebuilds it when they change); any other build is skipped, by its marker.
"""

import multiprocessing
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.llama_patches import installed_patches, tree_patches  # noqa: E402

from skulk.testing.models import bundled_gguf  # noqa: E402
from skulk.testing.ports import free_port  # noqa: E402

# ggml-rpc.cpp's command ids (protocol 7)
GET_TENSOR, GRAPH_COMPUTE, GRAPH_RECOMPUTE = 8, 10, 16
PROMPT = "Write a long story about a lighthouse keeper and a storm."
RESET = "Say hello."  # before each counted request, so both prefill alike
SHORT, LONG = 8, 40


pytestmark = pytest.mark.skipif(
    installed_patches() != tree_patches(),
    reason="the installed llama.cpp is not built with the tree's tools/patches "
           "(make install)")


@dataclass
class Crossings:
    """The head's reads toward the device, each as the ids of the commands it completes,
    and the device's reads back."""
    to_device: list[list[int]] = field(default_factory=list)
    to_head: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return len(self.to_device), self.to_head


class CommandStream:
    """ggml RPC's requests (| id: 1 | size: 8 | payload |) as they arrive in pieces."""

    def __init__(self) -> None:
        self._header = b""
        self._payload_left = 0
        self._command = -1

    def completed_in(self, data: bytes) -> list[int]:
        done, at = [], 0
        while at < len(data):
            if self._payload_left == 0 and len(self._header) < 9:
                take = min(9 - len(self._header), len(data) - at)
                self._header += data[at:at + take]
                at += take
                if len(self._header) < 9:
                    break
                self._command = self._header[0]
                self._payload_left = int.from_bytes(self._header[1:9], "little")
            take = min(self._payload_left, len(data) - at)
            self._payload_left -= take
            at += take
            if self._payload_left == 0:
                done.append(self._command)
                self._header = b""
        return done


@contextmanager
def counting_proxy(remote_port: int) -> Iterator[tuple[int, Crossings]]:
    crossings = Crossings()
    listener = socket.create_server(("127.0.0.1", 0))

    def pipe(source: socket.socket, sink: socket.socket, toward_device: bool) -> None:
        stream = CommandStream()
        with suppress(OSError):
            while data := source.recv(1 << 20):
                with crossings.lock:  # counted before it is passed on, so before its answer
                    if toward_device:
                        crossings.to_device.append(stream.completed_in(data))
                    else:
                        crossings.to_head += 1
                sink.sendall(data)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def carry() -> None:
        with suppress(OSError):
            while True:
                near, _ = listener.accept()
                far = socket.create_connection(("127.0.0.1", remote_port))
                for end in (near, far):
                    end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                threading.Thread(target=pipe, args=(near, far, True), daemon=True).start()
                threading.Thread(target=pipe, args=(far, near, False), daemon=True).start()

    threading.Thread(target=carry, daemon=True).start()
    try:
        yield listener.getsockname()[1], crossings
    finally:
        listener.close()


def _serve(port: int, cache_dir: str) -> None:
    from skulk.worker.engines.llama_cpp import rpc_lib

    rpc_lib.serve_device(f"127.0.0.1:{port}", cache_dir, 1)


def _head(endpoint: str, orders: Connection) -> None:
    """Loads the split, then for each order (a prompt and a length) generates greedily and
    answers the number of tokens; None ends it."""
    from skulk.worker.engines.llama_cpp import rpc_lib
    from skulk.worker.engines.llama_cpp.llama_lib import offload_for, open_context

    rpc_lib.register_servers([endpoint])
    context = open_context(str(bundled_gguf()), context_tokens=512, threads=1,
                           offload=offload_for([15, 15]))
    orders.send("loaded")
    while (order := orders.recv()) is not None:
        text, most = order
        prompt = context.tokenize(text, add_bos=True, special=False)
        count = 0
        for _ in context.generate(prompt, top_k=1, top_p=1.0, min_p=0.0, temperature=0.0,
                                  repeat_penalty=1.0):
            count += 1
            if count == most:
                break
        orders.send(count)


def _wait_listening(port: int, server: multiprocessing.process.BaseProcess) -> None:
    deadline = time.monotonic() + 30
    while True:
        with suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        assert time.monotonic() < deadline and server.is_alive(), "server never listened"
        time.sleep(0.05)


def test_a_decoded_token_crosses_in_one_send_and_one_reply(tmp_path: Path) -> None:
    spawn = multiprocessing.get_context("spawn")
    port = free_port()
    server = spawn.Process(target=_serve, args=(port, str(tmp_path)), daemon=True)
    server.start()
    try:
        # Probed before the proxy exists: the server serves one client at a time, and the
        # probe's connection is over before the head's.
        _wait_listening(port, server)
        with counting_proxy(port) as (proxy_port, crossings):
            ours, theirs = spawn.Pipe()
            head = spawn.Process(target=_head, args=(f"127.0.0.1:{proxy_port}", theirs))
            head.start()
            try:
                def answer() -> object:
                    deadline = time.monotonic() + 120
                    while not ours.poll(0.1):
                        assert head.is_alive(), f"the head exited ({head.exitcode})"
                        assert time.monotonic() < deadline, "no answer within 120 s"
                    return ours.recv()

                def generate(text: str, most: int) -> int:
                    ours.send((text, most))
                    return int(str(answer()))

                assert answer() == "loaded"

                generate(PROMPT, LONG)  # a context's first request builds its graphs
                counted: list[tuple[int, tuple[int, int], tuple[int, int]]] = []
                for most in (SHORT, LONG):
                    generate(RESET, 2)
                    before = crossings.snapshot()
                    tokens = generate(PROMPT, most)
                    after = crossings.snapshot()
                    counted.append((tokens, before, after))
                ours.send(None)
                head.join(30)
            finally:
                head.kill()
    finally:
        server.kill()
        server.join(10)
    (short_tokens, short_from, short_to), (long_tokens, long_from, long_to) = counted
    assert (short_tokens, long_tokens) == (SHORT, LONG)
    extra = long_tokens - short_tokens
    sends = ((long_to[0] - long_from[0]) - (short_to[0] - short_from[0])) / extra
    replies = ((long_to[1] - long_from[1]) - (short_to[1] - short_from[1])) / extra
    # What each of the long request's sends held: a decoded token's is its inputs, its
    # graph and the read of the result together. A head that loses its core for over a
    # millisecond mid-token sends what it held alone (the patch's bound), so a loaded
    # machine may split a few. (Sending the graph at once makes two a token; stock ggml ~24.)
    long_sends = crossings.to_device[long_from[0]:long_to[0]]
    whole = [ids for ids in long_sends
             if ids and ids[-1] == GET_TENSOR
             and (GRAPH_RECOMPUTE in ids or GRAPH_COMPUTE in ids)]
    assert sends <= 1.25, f"{sends:.2f} head sends a token: {long_sends}"
    assert len(whole) >= 0.75 * long_tokens, long_sends
    assert replies == pytest.approx(1.0, abs=0.05), f"{replies:.2f} device replies a token"
