"""What a decoded token costs the ggml RPC relays alone: a stand-in head and device, no llama.cpp.

    .venv/bin/python bench/relay_wakes.py [--quick] [--tokens 2000] [--repeats 3]

Per token the stand-in head sends what bench/llama_rpc.py's head sent with the first
version of Skulk's ggml RPC patch (one 7.7 KB batch of eight commands, then a
`get_tensor`), or with `--one-send` what it sends now (the two in one send), and reads a
2,312 B reply, which the stand-in device writes for each `get_tensor`. As in llama_rpc.py,
the relay server runs beside the device on core 1 and the forwarder beside the head on
core 0, each relay in a process of its own (`llama_rpc_support.py --role relay|forward`),
with TLS. Two settings: hot, the messages back to back; cold, where between messages the
device and then the head sweep 16 MB of memory (SWEEPS times each) as llama.cpp's compute
does, so each wake of a relay finds the core's caches full of someone else's data. Each
relay's CPU per token (its threads' schedstat, ns) and voluntary wake-ups per token,
medians over the repeats; on loopback, and, as root, across two network namespaces with 1
Gbit/s links as llama_rpc.py's hosts.
"""

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.llama_rpc_support import MARK, make_members, wakes  # noqa: E402
from bench.results import write_result  # noqa: E402

from skulk.testing.netns import Hosts, missing  # noqa: E402

SUPPORT = str(Path(__file__).resolve().parent / "llama_rpc_support.py")
DEVICE_PORT, RELAY_PORT = 51055, 51053
SET_TENSOR, GRAPH_COMPUTE, GET_TENSOR = 6, 8, 9
REPLY_BYTES = 2304  # the hidden state's result, as llama_rpc.py's head reads it
SWEEPS = 3  # cold: 16 MB sweeps per token by the device, twice as many by the head
WARM_UP_TOKENS = 100
RELAYS = ("relay", "forwarder")
Wrap = Callable[[int, Sequence[str]], list[str]]


def command(kind: int, size: int) -> bytes:
    return bytes([kind]) + struct.pack("<Q", size) + bytes(size)


# One token's batch as the patched head writes it (llama_rpc.py's counted 7,676 B).
BATCH = (command(SET_TENSOR, 2304) * 2 + command(SET_TENSOR, 512) * 5
         + command(GRAPH_COMPUTE, 408))
READ_RESULT = command(GET_TENSOR, 24)


class Sweeper:
    """Stands in for llama.cpp's compute between messages: sweeps of 16 MB."""

    def __init__(self, sweeps: int) -> None:
        self.sweeps = sweeps
        self._memory = numpy.zeros(1 << 21) if sweeps else None

    def __call__(self, times: int = 1) -> None:
        if self._memory is not None:
            for _ in range(self.sweeps * times):
                self._memory += 1


def receive(connection: socket.socket, size: int) -> bytes:
    received = bytearray()
    while len(received) < size:
        chunk = connection.recv(size - len(received))
        if not chunk:
            raise EOFError
        received += chunk
    return bytes(received)


def cpu_ns(pid: int) -> int:
    """CPU time process `pid`'s threads have used so far (schedstat, ns)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            pass
    return total


def run_device(port: int, sweeps: int) -> None:
    """Reads commands; answers each get_tensor after a sweep (its compute)."""
    sweep = Sweeper(sweeps)
    listener = socket.create_server(("127.0.0.1", port))
    while True:
        connection, _ = listener.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                kind = receive(connection, 1)[0]
                (size,) = struct.unpack("<Q", receive(connection, 8))
                receive(connection, size)
                if kind == GET_TENSOR:
                    sweep()
                    connection.sendall(struct.pack("<Q", REPLY_BYTES) + bytes(REPLY_BYTES))
        except EOFError:
            connection.close()


def run_head(endpoint: str, tokens: int, sweeps: int, watched: dict[str, int],
             one_send: bool) -> None:
    """Decodes `tokens` stand-in tokens through the forwarder at `endpoint`; prints each
    watched relay's CPU and wake-ups per token. `one_send`: the batch and the read of its
    result leave in one send (a head that held the graph for the read)."""
    sweep = Sweeper(sweeps)
    host, _, port = endpoint.rpartition(":")
    connection = socket.create_connection((host, int(port)))
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def token() -> None:
        if one_send:
            connection.sendall(BATCH + READ_RESULT)
        else:
            connection.sendall(BATCH)
            connection.sendall(READ_RESULT)
        receive(connection, 8 + REPLY_BYTES)
        sweep(2)

    for _ in range(WARM_UP_TOKENS):
        token()
    before = {name: (cpu_ns(pid), wakes(pid)) for name, pid in watched.items()}
    started = time.perf_counter()
    for _ in range(tokens):
        token()
    wall = time.perf_counter() - started
    figures: dict[str, float] = {"wall_us": wall / tokens * 1e6}
    for name, pid in watched.items():
        figures[f"{name}_cpu_us"] = (cpu_ns(pid) - before[name][0]) / tokens / 1000
        figures[f"{name}_wakes"] = (wakes(pid) - before[name][1]) / tokens
    print(MARK + json.dumps(figures), flush=True)
    connection.close()


def started(process: "subprocess.Popen[str]") -> dict[str, object]:
    """The first answer a support process prints."""
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(MARK):
            answer: dict[str, object] = json.loads(line.removeprefix(MARK))
            return answer
    raise RuntimeError(f"process {process.pid} exited before it answered")


def one_run(wrap: Wrap, device_host: str, tokens: int, sweeps: int, one_send: bool,
            ports: tuple[int, int] = (DEVICE_PORT, RELAY_PORT)) -> dict[str, float]:
    """Device, relay, forwarder and head started afresh (the device and the relay server
    listening on `ports`); the head's figures."""
    device_port, relay_port = ports
    root = Path(tempfile.mkdtemp(prefix="relay-wakes-"))
    hosts = [root / "host0", root / "host1"]
    make_members(root / "authority", hosts)
    script = str(Path(__file__).resolve())
    device = subprocess.Popen(wrap(1, [sys.executable, script, "--role", "device",
                                       "--port", str(device_port), "--sweeps", str(sweeps)]))
    relays: list[subprocess.Popen[str]] = []
    try:
        relays.append(subprocess.Popen(
            wrap(1, [sys.executable, SUPPORT, "--role", "relay", "--listen",
                     f"{device_host}:{relay_port}", "--target", f"127.0.0.1:{device_port}",
                     "--data-dir", str(hosts[1])]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        started(relays[0])
        relays.append(subprocess.Popen(
            wrap(0, [sys.executable, SUPPORT, "--role", "forward", "--remote",
                     f"{device_host}:{relay_port}", "--data-dir", str(hosts[0]),
                     "--peer-dir", str(hosts[1])]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        endpoint = str(started(relays[1])["endpoint"])
        watch = ",".join(f"{name}={process.pid}"
                         for name, process in zip(RELAYS, relays, strict=True))
        head = subprocess.run(
            wrap(0, [sys.executable, script, "--role", "head", "--endpoint", endpoint,
                     "--tokens", str(tokens), "--sweeps", str(sweeps), "--watch", watch,
                     *(["--one-send"] if one_send else [])]),
            capture_output=True, text=True, timeout=600, check=True)
        answer = head.stdout.rpartition(MARK)[2]
        figures: dict[str, float] = json.loads(answer)
        return figures
    finally:
        for process in relays:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=10)
        device.kill()
        device.wait()


def measure(place: str, wrap: Wrap, device_host: str, tokens: int, repeats: int,
            one_send: bool) -> dict[str, dict[str, float]]:
    """Medians over `repeats` runs of hot and cold, alternating."""
    runs: dict[str, list[dict[str, float]]] = {"hot": [], "cold": []}
    for _ in range(repeats):
        for setting, sweeps in (("hot", 0), ("cold", SWEEPS)):
            count = tokens if setting == "hot" else max(tokens // 4, 100)
            runs[setting].append(one_run(wrap, device_host, count, sweeps, one_send))
    medians = {setting: {key: statistics.median(run[key] for run in results)
                         for key in results[0]} for setting, results in runs.items()}
    for setting, row in medians.items():
        both = row["relay_cpu_us"] + row["forwarder_cpu_us"]
        print(f"{place:10} {setting:4}  relay {row['relay_cpu_us']:6.1f} us "
              f"({row['relay_wakes']:.1f} wakes) + forwarder {row['forwarder_cpu_us']:6.1f} us "
              f"({row['forwarder_wakes']:.1f} wakes) = {both:6.1f} us per token; "
              f"{both / (row['relay_wakes'] + row['forwarder_wakes']):5.1f} us per wake")
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["device", "head"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--watch", default="", help=argparse.SUPPRESS)
    parser.add_argument("--sweeps", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--tokens", type=int, default=2000, help="hot tokens per run "
                        "(cold: a quarter)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rate", default="1gbit", help="the namespaces' link cap, or off")
    parser.add_argument("--quick", action="store_true", help="300 tokens, one repeat")
    parser.add_argument("--one-send", action="store_true", help="the head sends each "
                        "token's batch and the read of its result together, as the patched "
                        "ggml RPC does since it holds a graph for the read (without: apart, "
                        "as its first version did)")
    args = parser.parse_args()
    if args.role == "device":
        run_device(args.port, args.sweeps)
        return 0
    if args.role == "head":
        watched = dict(item.split("=") for item in args.watch.split(",") if item)
        run_head(args.endpoint, args.tokens, args.sweeps,
                 {name: int(pid) for name, pid in watched.items()}, args.one_send)
        return 0
    tokens, repeats = (300, 1) if args.quick else (args.tokens, args.repeats)
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    places = {"loopback": measure(
        "loopback", lambda core, argv: ["taskset", "-c", str(core), *argv], "127.0.0.1",
        tokens, repeats, args.one_send)}
    if (reason := missing()) is None:
        with Hosts(2) as hosts:
            for host in (0, 1):
                hosts.rate(host, None if args.rate == "off" else args.rate)
            places["namespaces"] = measure(
                "namespaces", lambda core, argv: hosts.command(core, list(argv), core=core),
                hosts.address(1), tokens, repeats, args.one_send)
    else:
        print(f"namespaces skipped: {reason}")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    write_result("relay_wakes", {"tokens": tokens, "repeats": repeats, "sweeps": SWEEPS,
                                 "rate": args.rate, "one_send": args.one_send,
                                 "places": places})
    return 0


if __name__ == "__main__":
    sys.exit(main())
