"""Servers that take turns: started together, frozen with SIGSTOP while another is
measured, thawed with SIGCONT for their own turn (llama_server_compare.py).

This machine's speed drifts by 10-20 % within minutes, so a server measured in its own
minute-long window reads mostly the drift. Measured item by item in alternation, each
server's figures come from the same few seconds as its rivals'. Frozen, an idle server's
timers, telemetry and spinning threads cost the measured one nothing.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from bench.bare_http import MODEL
from bench.chat_latency import Sample
from tests.node_process import NodeProcess

from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES
from skulk.testing.ports import free_port

PARALLEL = 4
CONTEXT = 8192
# A thawed server first runs what came due while it was frozen (keep-alive timers,
# telemetry, its event loop's catch-up); that is left out of its turn.
SETTLE_SECONDS = 0.3
# Each turn opens with a short request of its own (its connection, its caches warm), as
# the prompt before it did when a server's prompts ran back to back.
PRIME_PROMPT = "Say hello."
PRIME_TOKENS = 4
IDLE_WAIT_SECONDS = 30.0


def turn_order(names: tuple[str, ...], round_: int, item: int) -> tuple[str, ...]:
    """Who is measured first, second, ... on this item of this round: the order rotates
    by one from item to item and from round to round, so over as many items (or rounds)
    as there are names each takes each place once."""
    shift = (round_ + item) % len(names)
    return names[shift:] + names[:shift]


def per_token_ms(spent_seconds: dict[str, float], tokens: int) -> dict[str, float]:
    """CPU milliseconds per generated token, by process."""
    return {name: seconds * 1000 / max(tokens, 1) for name, seconds in spent_seconds.items()}


class CpuMeter:
    """CPU seconds the named processes spent inside `measuring()`, summed over its uses
    until `per_token` reads and clears them: a server's figure covers its own turns only."""

    def __init__(self, pids: dict[str, int]) -> None:
        self._processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self._spent = dict.fromkeys(pids, 0.0)

    def _now(self) -> dict[str, float]:
        return {name: sum(process.cpu_times()[:2]) for name, process in self._processes.items()}

    @contextmanager
    def measuring(self) -> Iterator[None]:
        before = self._now()
        try:
            yield
        finally:
            after = self._now()
            for name in after:
                self._spent[name] += after[name] - before[name]

    def per_token(self, tokens: int) -> dict[str, float]:
        spent, self._spent = self._spent, dict.fromkeys(self._spent, 0.0)
        return per_token_ms(spent, tokens)


def signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:  # a helper process that has exited: nothing to hold
            pass


def wait_stopped(pids: list[int], timeout: float = 5.0) -> None:
    """Until every thread of every process has taken its SIGSTOP (delivery is not
    instant), so the next turn starts with nothing of these still running."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        try:
            process = psutil.Process(pid)
            while process.status() not in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"process {pid} did not stop within {timeout:.0f} s")
                time.sleep(0.001)
        except psutil.NoSuchProcess:
            pass


@dataclass
class Contender:
    """One server (or the engine alone) as the rounds see it: how to ask it for one
    completion, the processes to freeze with everything under them, and how to tell it
    has finished its work."""

    name: str
    ask: Callable[[str, int], Sample]  # prompt, max_tokens
    roots: list[int]
    meter: CpuMeter
    # Returns once nothing the last request started is still running in the server.
    idle: Callable[[], None] = lambda: None
    held: list[int] = field(default_factory=list, init=False)

    @property
    def frozen(self) -> bool:
        return bool(self.held)

    def freeze(self) -> None:
        self.idle()
        # Read at each freeze: a node may have started a helper process since the last.
        self.held = [pid for root in self.roots for pid in process_tree(root)]
        signal_all(self.held, signal.SIGSTOP)
        wait_stopped(self.held)

    def thaw(self) -> None:
        held, self.held = self.held, []
        signal_all(held, signal.SIGCONT)


@contextmanager
def turn(contender: Contender) -> Iterator[Contender]:
    """Thaw, settle and prime `contender`; freeze it again afterwards."""
    contender.thaw()
    try:
        time.sleep(SETTLE_SECONDS)
        contender.ask(PRIME_PROMPT, PRIME_TOKENS)
        yield contender
    finally:
        contender.freeze()


@contextmanager
def thawed_on_exit(contenders: list[Contender]) -> Iterator[list[Contender]]:
    """However a round ends, every frozen process is continued before anything stops it
    (a stopped process holds a SIGTERM until continued)."""
    try:
        yield contenders
    finally:
        for contender in contenders:
            if contender.frozen:
                contender.thaw()


def process_tree(pid: int) -> list[int]:
    """`pid` and every process under it, parents before children."""
    return [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))]


def wait_node_calibrated(node_pid: int, timeout: float = 180.0) -> None:
    """Until the node's decode probe has ended: the first node after a boot measures the
    machine's decode constants (up to a minute of CPU), which would run in its turns."""
    deadline = time.monotonic() + timeout
    while any("decode_probe" in " ".join(child.cmdline())
              for child in psutil.Process(node_pid).children(recursive=True)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the node's decode probe still runs after {timeout:.0f} s")
        time.sleep(0.5)


def wait_node_idle(base_url: str) -> None:
    """Until the node's state holds no task still running: a runner frozen with one in
    flight would read, on thawing, as silent for the whole freeze (a stall)."""
    deadline = time.monotonic() + IDLE_WAIT_SECONDS
    while time.monotonic() < deadline:
        tasks = httpx.get(f"{base_url}/state", timeout=10).json()["tasks"]
        if all(task["status"] in TERMINAL_TASK_STATUSES for task in tasks.values()):
            return
        time.sleep(0.02)
    raise RuntimeError(f"the node at {base_url} still runs a task after "
                       f"{IDLE_WAIT_SECONDS:.0f} s")


@contextmanager
def skulk_server(batching: bool, threads: int | None = None, parallel: int = PARALLEL,
                 ) -> Iterator[tuple[str, str, dict[str, int]]]:
    with tempfile.TemporaryDirectory() as data_dir:
        flags = ["--serve", "smollm2-135m", "-q"] + ([] if batching else ["--no-batching"])
        flags += ["--engine-option", f"llama_cpp.max_batch={parallel}"]
        # Always given: a node's own default leaves a core to serving, llama-server's not.
        flags += ["--threads", str(threads or os.cpu_count())]
        node = NodeProcess(Path(data_dir), *flags).start()
        try:
            node.wait_model_ready(timeout=300)
            assert node.process is not None
            pids = {"node": node.process.pid, "runner": node.runner_pids()[0]}
            yield f"{node.url}/v1", "smollm2-135m", pids
        finally:
            node.stop()


@contextmanager
def llama_cpp_server(binary: Path, gguf: Path, threads: int | None = None,
                     parallel: int = PARALLEL, gpu_layers: int | None = None,
                     ) -> Iterator[tuple[str, str, dict[str, int]]]:
    port = free_port()
    process = subprocess.Popen(
        [str(binary), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port),
         "-t", str(threads or os.cpu_count()), "-np", str(parallel), "-c", str(CONTEXT),
         "-kvu", *([] if gpu_layers is None else ["-ngl", str(gpu_layers)])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("llama-server did not become healthy")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1", "smollm2", {"server": process.pid}
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:  # seen once: a run's four rounds were lost to it
            process.kill()
            process.wait(30)


@contextmanager
def pinned(cores: set[int] | None) -> Iterator[None]:
    """This thread, and every process it starts meanwhile (they inherit it), on `cores`
    only; None leaves the placement to the scheduler."""
    if cores is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextmanager
def engine_alone(gguf: Path, threads: int | None = None, gpu_layers: int | None = None,
                 ) -> Iterator[tuple[str, str, dict[str, int]]]:
    """bench/engine_alone.py kept up, streaming chat completions over a bare HTTP socket
    (bench/bare_http.py): its base URL, model name and pid, as the servers give theirs.
    Loaded and warmed up when this yields."""
    script = Path(__file__).resolve().parent / "engine_alone.py"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(script), str(gguf), "--port", str(port),
         "--context", str(CONTEXT),
         *([] if threads is None else ["--threads", str(threads)]),
         *([] if gpu_layers is None else ["--gpu-layers", str(gpu_layers)])],
        stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        line = process.stdout.readline()
        if not line or not json.loads(line).get("ready"):
            raise RuntimeError(f"the engine alone did not start ({process.poll()})")
        yield f"http://127.0.0.1:{port}/v1", MODEL, {"engine": process.pid}
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
