"""Start and stop real `skulk run` processes for integration tests."""

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx

from skulk.testing.cluster_trust import make_member
from skulk.testing.ports import free_port

API_PORT_TRIES = 3


class NodeProcess:
    """A `skulk run` subprocess on free ports, with its log kept for failures."""

    def __init__(self, data_dir: Path, *extra_args: str, authority: Path | None = None,
                 program: Sequence[str] = ("-m", "skulk.cli.main", "run")) -> None:
        """`authority`: a folder holding a test cluster's CA, which issues this node its
        certificate before it starts (several nodes with one authority form one secure
        cluster without the join exchange). Without it a node makes its own cluster.
        `program`: what Python runs, taking `skulk run`'s flags (a bench's launcher)."""
        self.program = list(program)
        self.data_dir = data_dir
        self.authority = authority
        self.api_port = free_port()
        self.transport_port = free_port()
        self.url = f"http://127.0.0.1:{self.api_port}"
        self.log_path = data_dir / "node.log"
        self._extra_args = list(extra_args)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> "NodeProcess":
        """Start the node and wait for its API. free_port cannot hold a port until the node
        binds it: if something took the API port meanwhile (a fresh clone's run once
        lost one that way), the node starts again on another; no peer knows that port."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.authority is not None:
            anyio.run(make_member, self.authority, self.data_dir)
        for _ in range(API_PORT_TRIES - 1):
            try:
                return self._start_once(timeout)
            except AssertionError:
                if f"API port {self.api_port} is already in use" not in self.log():
                    raise
                self.api_port = free_port()
                self.url = f"http://127.0.0.1:{self.api_port}"
        return self._start_once(timeout)

    def _start_once(self, timeout: float) -> "NodeProcess":
        command = [sys.executable, *self.program,
                   "--api-port", str(self.api_port), "--data-dir", str(self.data_dir),
                   "--listen", f"tcp/127.0.0.1:{self.transport_port}",
                   "--no-discover", *self._extra_args]
        if not any(a == "--namespace" for a in self._extra_args):
            command += ["--namespace", f"test-{self.api_port}"]
        if not any(a == "--admit-port" for a in self._extra_args):
            command += ["--admit-port", "0"]  # transport port + 1 may be taken
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.wait_until(lambda: self.get("/healthz").status_code == 200, timeout,
                        "the node's API to answer")
        return self

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10.0)

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.get("/state").json()
        return state

    def metric(self, name: str) -> float:
        """One unlabelled sample of `/metrics` (a counter's with its `_total`)."""
        found = re.search(rf"^{re.escape(name)} (\S+)$", self.get("/metrics").text,
                          re.MULTILINE)
        assert found is not None, f"the node exports {name}"
        return float(found.group(1))

    def wait_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"node exited with {self.process.returncode} while "
                                     f"waiting for {what}:\n{self.log()}")
            try:
                if predicate():
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}:\n{self.log()}")

    def wait_model_ready(self, timeout: float = 120.0) -> None:
        def ready() -> bool:
            state = self.state()
            runners = state["runners"]
            return any(all(runners.get(r, {}).get("kind") in ("ready", "running")
                           for r in instance["shards"])
                       for instance in state["instances"].values())
        self.wait_until(ready, timeout, "a model instance to be ready")

    def wait_instance_ready(self, instance_id: str, timeout: float) -> dict[str, Any]:
        """The instance as `GET /instance/{id}` shows it once ready; fails at once if it
        is gone (given up or deleted), with this node's log."""
        def ready() -> bool:
            reply = self.get(f"/instance/{instance_id}")
            assert reply.status_code == 200, \
                f"instance {instance_id} is gone: {reply.text}\n{self.log()}"
            return bool(reply.json()["status"] == "ready")
        self.wait_until(ready, timeout, f"instance {instance_id} to be ready")
        instance: dict[str, Any] = self.get(f"/instance/{instance_id}").json()
        return instance

    def runner_pids(self) -> list[int]:
        import psutil
        assert self.process is not None
        return [child.pid for child in psutil.Process(self.process.pid).children()
                if "spawn_main" in " ".join(child.cmdline())]

    def newest_runner_pid(self) -> int:
        """The runner this node started last (one shutting down may linger beside it)."""
        import psutil
        assert self.process is not None
        runners = [child for child in psutil.Process(self.process.pid).children()
                   if child.status() != psutil.STATUS_ZOMBIE
                   and "spawn_main" in " ".join(child.cmdline())]
        assert runners, "this node runs no runner"
        return max(runners, key=lambda child: child.create_time()).pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def cluster(self) -> dict[str, Any]:
        cluster: dict[str, Any] = self.get("/cluster").json()
        return cluster

    def node_id(self) -> str:
        node_id: str = self.get("/node_id").json()["node_id"]
        return node_id

    def kill(self) -> None:
        """SIGKILL, as when a machine dies: no cleanup runs."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self, timeout: float = 20.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(f"node did not stop on SIGTERM:\n{self.log()}") from None
        return self.process.returncode


@contextmanager
def meshed_nodes(root: Path, count: int, *flags: str) -> Iterator[list[NodeProcess]]:
    """`count` started nodes in a fresh namespace, each told the transport of every node
    before it; the ones still running are stopped on exit."""
    namespace = f"mesh-{time.monotonic_ns()}"
    nodes: list[NodeProcess] = []
    for index in range(count):
        peers = [arg for node in nodes
                 for arg in ("--peer", f"tcp/127.0.0.1:{node.transport_port}")]
        nodes.append(NodeProcess(root / chr(ord("a") + index), "--namespace", namespace,
                                 *flags, *peers, authority=root / "authority"))
    try:
        for node in nodes:
            node.start()
        yield nodes
    finally:
        for node in nodes:
            if node.process is not None and node.process.poll() is None:
                node.stop()


@contextmanager
def serving_bundled_model(data_dir: Path) -> Iterator[NodeProcess]:
    """One started node serving the bundled model, ready; stopped on exit."""
    node = NodeProcess(data_dir, "--serve", "smollm2-135m")
    node.start()
    try:
        node.wait_model_ready()
        yield node
    finally:
        node.stop()
