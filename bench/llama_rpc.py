"""llama.cpp split by layers over ggml RPC, beside one process holding the whole model.

    .venv/bin/python bench/llama_rpc.py [--repeats 3] [--max-tokens 128]   (as root)

Two hosts made of network namespaces (`skulk.testing.netns`), each one's outgoing
link capped at 1 Gbit/s, every process of host i pinned to core i, one engine thread each:
(a) whole: one process holding the bundled GGUF, in host 0;
(b) direct: the head (layers 0-14) in host 0 dials a device server (layers 15-29 and the
    output) in host 1 over plain ggml RPC, as on an `--insecure` cluster;
(c) secured: the same split as a secure cluster runs it, the production path: TLS 1.3
    between the two nodes' certificates inside ggml RPC's own sockets, on llama.cpp's own
    threads (Skulk's channel: tools/patches/ggml-rpc-secure-channel.patch, rust/channel/src/
    channel.rs), no other process between.
Greedy, the same prompts, the three interleaved request by request; medians of time to
first token and decode tokens/s, ratios against (a), the per-token cost of a hop (b - a)
and of the security (c - b): in wall time; in CPU, the head's and the device's processes'
extra time per token over the direct split's (schedstat); and the CPU inside the channel's
send and recv themselves, with its TLS work apart from its socket calls (the channel
counts its threads' CPU clock when the bench asks). A separate, untimed split through a
counting proxy gives the round trips and bytes per token, from which the cost of a
network's latency is computed: this kernel has no netem, so no latency is added for real.
"""

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.llama_rpc_report import print_report  # noqa: E402
from bench.llama_rpc_support import MARK, make_members  # noqa: E402

from skulk.testing.netns import Hosts, missing  # noqa: E402

SUPPORT = str(Path(__file__).resolve().parent / "llama_rpc_support.py")
DEVICE_HOST = "10.77.0.2"
DIRECT_PORT, SECURE_PORT, COUNTED_PORT = 50052, 50053, 50054
READY_SECONDS = 120.0
ANSWER_SECONDS = 120.0
CONFIGURATIONS = ("whole", "direct", "secured")
PROMPTS = [
    "Explain why the sky is blue in a few sentences.",
    "Write a short story about a fox in the snow.",
    "List five uses for a paperclip and explain each one.",
]
COUNTED_PROMPT = "Write a long story about a lighthouse keeper and a storm."
COUNTED_RESET = "Say hello."  # run before each counted request, so both prefill alike
COUNTED_TOKENS = (16, 64)


class Process:
    """A bench process in host `host`'s namespace, pinned to core `host`; its `BENCH`
    lines are its answers, the rest of its output goes to `<name>.log`."""

    def __init__(self, name: str, hosts: Hosts, host: int, log_dir: Path, *args: str
                 ) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log: IO[str] = self.log_path.open("a")
        command = hosts.command(host, [sys.executable, SUPPORT, *args], core=host)
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.pid = self._process.pid  # ip netns exec and taskset exec: this is Python's
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            # Not only at the start: llama.cpp's device server prints from its own thread
            # ("Accepted client connection" for the readiness probe's connection), and a
            # line of its can run into ours on the shared pipe.
            before, mark, answer = line.partition(MARK)
            if mark:
                if before:
                    self._log.write(before + "\n")
                self._answers.put(json.loads(answer))
            else:
                self._log.write(line)
        self._answers.put(None)

    def answer(self, timeout: float = READY_SECONDS) -> dict[str, Any]:
        try:
            answer = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"{self.name} did not answer within {timeout:.0f} s:\n"
                               f"{self.log_tail()}") from None
        if answer is None:
            raise RuntimeError(f"{self.name} exited ({self._process.wait()}):\n"
                               f"{self.log_tail()}")
        return answer

    def log_tail(self) -> str:
        """The end of its log (which goes with the run's temporary folder)."""
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def ask(self, request: dict[str, Any], timeout: float = ANSWER_SECONDS) -> dict[str, Any]:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        return self.answer(timeout)

    def stop(self) -> None:
        """End of stdin asks it to leave; kill it if it does not."""
        try:
            assert self._process.stdin is not None
            self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()


@contextmanager
def two_hosts(rate: str) -> Iterator[Hosts]:
    """Hosts 0 and 1 (10.77.0.1, .2) on one bridge, each link capped at `rate`."""
    with Hosts(2) as hosts:
        for host in (0, 1):
            hosts.rate(host, None if rate == "off" else rate)
        yield hosts


class Spawner:
    """Starts processes whose stop the stack owns (stopped before the hosts go)."""

    def __init__(self, stack: ExitStack, hosts: Hosts, root: Path) -> None:
        self._stack = stack
        self._hosts = hosts
        self.root = root

    def __call__(self, name: str, host: int, *args: str) -> Process:
        process = Process(name, self._hosts, host, self.root, *args)
        self._stack.callback(process.stop)
        return process

    def device(self, name: str, listen: str, *secure: str) -> Process:
        device = self(name, 1, "--role", "device", "--listen", listen,
                      "--cache-dir", str(self.root / f"{name}-cache"), *secure)
        device.answer()
        return device

    def head(self, name: str, model: str, rpc_server: str | None,
             watched: dict[str, Process] | None = None, *secure: str
             ) -> tuple[Process, float]:
        """A loaded head and its load time (warm-up included); it reports the CPU time
        the `watched` processes spend while it decodes."""
        extra = [] if rpc_server is None else ["--rpc-server", rpc_server, *secure]
        if watched:
            extra += ["--watch", ",".join(f"{key}={p.pid}" for key, p in watched.items())]
        head = self(name, 0, "--role", "head", "--model", model, *extra)
        ready = head.answer()
        return head, float(ready["load_seconds"])


def start_heads(spawn: Spawner, model: str
                ) -> tuple[dict[str, Process], dict[str, float], Process]:
    """The three configurations' heads, loaded one after the other, their load times, and
    the secured split's device server."""
    hosts = [spawn.root / "host0", spawn.root / "host1"]
    make_members(spawn.root / "authority", hosts)
    direct = spawn.device("direct-device", f"{DEVICE_HOST}:{DIRECT_PORT}")
    secured = spawn.device("secured-device", f"{DEVICE_HOST}:{SECURE_PORT}",
                           "--data-dir", str(hosts[1]))
    heads, load_seconds = {}, {}
    heads["whole"], load_seconds["whole"] = spawn.head("whole-head", model, None)
    heads["direct"], load_seconds["direct"] = spawn.head(
        "direct-head", model, f"{DEVICE_HOST}:{DIRECT_PORT}", {"device": direct})
    heads["secured"], load_seconds["secured"] = spawn.head(
        "secured-head", model, f"{DEVICE_HOST}:{SECURE_PORT}", {"device": secured},
        "--data-dir", str(hosts[0]), "--peer-dir", str(hosts[1]))
    return heads, load_seconds, secured


def measure(heads: dict[str, Process], secured_device: Process, repeats: int,
            max_tokens: int) -> dict[str, list[dict[str, Any]]]:
    """Every prompt on every configuration, request by request, rotating which goes first.
    A secured request also says the CPU its device spent inside the channel (over the
    whole request: its prompt's share included)."""
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in heads}
    for repeat in range(repeats):
        order = CONFIGURATIONS[repeat % 3:] + CONFIGURATIONS[:repeat % 3]
        for prompt in PROMPTS:
            for name in order:
                before = secured_device.ask({})
                run = heads[name].ask({"prompt": prompt, "max_tokens": max_tokens})
                after = secured_device.ask({})
                run["channel_device"] = after["channel_cpu"] - before["channel_cpu"]
                run["channelsocket_device"] = (after["channel_socket_cpu"]
                                               - before["channel_socket_cpu"])
                samples[name].append(run)
    return samples


def count_round_trips(hosts: Hosts, root: Path, model: str) -> dict[str, float]:
    """Round trips and payload bytes per decoded token and until the first token, from two
    requests differing only in length through a counting proxy in host 0 (untimed)."""
    with ExitStack() as stack:
        spawn = Spawner(stack, hosts, root)
        spawn.device("counted-device", f"{DEVICE_HOST}:{COUNTED_PORT}")
        counter = spawn("counter", 0, "--role", "count", "--remote",
                        f"{DEVICE_HOST}:{COUNTED_PORT}")
        head, _ = spawn.head("counted-head", model, str(counter.answer()["endpoint"]))
        counted: list[tuple[int, dict[str, int]]] = []
        # Uncounted first: a context's first request at a length builds graphs and
        # buffers (extra round trips) that later requests reuse.
        head.ask({"prompt": COUNTED_PROMPT, "max_tokens": max(COUNTED_TOKENS)})
        for max_tokens in COUNTED_TOKENS:
            head.ask({"prompt": COUNTED_RESET, "max_tokens": 4})
            before = counter.ask({})
            tokens = int(head.ask({"prompt": COUNTED_PROMPT,
                                   "max_tokens": max_tokens})["tokens_after_first"])
            after = counter.ask({})
            counted.append((tokens, {key: after[key] - before[key] for key in after}))
    print(f"counted (decoded tokens after the first, crossings): {counted}")
    (short_tokens, short), (long_tokens, long) = counted
    figures: dict[str, float] = {}
    for key in short:
        per_token = (long[key] - short[key]) / (long_tokens - short_tokens)
        figures[f"{key}_per_token"] = per_token
        figures[f"{key}_to_first"] = short[key] - per_token * short_tokens
    return figures


def model_path() -> str:
    from skulk.models.catalog import ModelCatalog

    catalog = ModelCatalog.builtin(Path(tempfile.gettempdir()))
    card = catalog.resolve("smollm2-135m")
    path = None if card is None else catalog.local_path(card, "gguf")
    if path is None:
        raise SystemExit("the bundled smollm2-135m GGUF is missing: run `make install`")
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rate", default="1gbit", help="each host's link cap, or off")
    args = parser.parse_args()
    if (reason := missing()) is not None:
        raise SystemExit(f"needs network namespaces: {reason}")
    model = model_path()
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory(prefix="llama-rpc-") as folder, \
            two_hosts(args.rate) as hosts:
        root = Path(folder)
        rounds = count_round_trips(hosts, root, model)
        with ExitStack() as stack:
            heads, load_seconds, secured_device = start_heads(Spawner(stack, hosts, root),
                                                              model)
            samples = measure(heads, secured_device, args.repeats, args.max_tokens)
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print_report(samples, load_seconds, rounds, args.max_tokens, args.rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
