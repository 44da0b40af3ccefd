"""Skulk nodes on test hosts made of network namespaces (`skulk.testing.netns`)."""

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from skulk.testing.cluster_trust import make_member
from skulk.testing.netns import Hosts, missing

API_PORT = 52415
TRANSPORT_PORT = 7447


def available() -> str | None:
    """Why these tests cannot run here, in one line, or None when they can."""
    if (reason := missing()) is not None:
        return reason
    if shutil.which("curl") is None:
        return "no `curl` on PATH (requests from inside a host use it)"
    return None


# For tests that need the hosts: skipped, with the reason, on a machine that cannot make them.
needs_hosts = pytest.mark.skipif(available() is not None,
                                 reason=f"needs test hosts: {available()}")


class NetnsCluster:
    """N hosts at 10.77.0.1..N, one `skulk run` on each, all peers of each other."""

    def __init__(self, count: int, root: Path, *, api_on_host_address: bool = True,
                 extra_args: tuple[str, ...] = ()) -> None:
        """`api_on_host_address` False: each API listens on its namespace's loopback (the
        default `--api-host`), reachable only from inside its own host."""
        self.count = count
        self.root = root
        self.api_on_host_address = api_on_host_address
        self.extra_args = extra_args
        self.network = Hosts(count)
        self.processes: list[subprocess.Popen[bytes]] = []
        self._stack = ExitStack()

    def address(self, host: int) -> str:
        return self.network.address(host)

    def api_host(self, host: int) -> str:
        return self.address(host) if self.api_on_host_address else "127.0.0.1"

    def __enter__(self) -> "NetnsCluster":
        self._stack.enter_context(self.network)
        self._stack.callback(self._stop_nodes)
        try:
            self._start_nodes()
        except BaseException:
            self._stack.close()
            raise
        return self

    def _start_nodes(self) -> None:
        cluster_name = f"netns-{self.network.run_id}"
        for host in range(self.count):
            peers = [arg for other in range(self.count) if other != host for arg in
                     ("--peer", f"tcp/{self.address(other)}:{TRANSPORT_PORT}")]
            # Members of one cluster: certificates from one test authority.
            anyio.run(make_member, self.root / "authority", self.root / f"node{host}")
            with (self.root / f"node{host}.log").open("ab") as log:
                self.processes.append(subprocess.Popen(self.network.command(host, [
                    sys.executable, "-m", "skulk.cli.main", "run", "--api-host",
                    self.api_host(host), "--api-port", str(API_PORT), "--listen",
                    f"tcp/{self.address(host)}:{TRANSPORT_PORT}", *peers, "--no-discover",
                    "--namespace", cluster_name, "--data-dir",
                    str(self.root / f"node{host}"), *self.extra_args]),
                    stdout=log, stderr=subprocess.STDOUT))

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _stop_nodes(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def request(self, host: int, method: str, path: str,
                body: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        """An HTTP request from inside the host's namespace; None when it fails."""
        command = self.network.command(host, [
            "curl", "-s", "-f", "-m", str(timeout), "-X", method,
            f"http://{self.api_host(host)}:{API_PORT}{path}"])
        if body is not None:
            command += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        result = subprocess.run(command, capture_output=True, timeout=timeout + 5)
        if result.returncode != 0:
            return None
        return json.loads(result.stdout)

    def request_status(self, host: int, method: str, path: str,
                       body: dict[str, Any] | None = None, timeout: float = 30
                       ) -> tuple[int, str]:
        """(HTTP status, body text) of a request from inside the host's namespace."""
        command = self.network.command(host, [
            "curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-m", str(timeout), "-X",
            method, f"http://{self.api_host(host)}:{API_PORT}{path}"])
        if body is not None:
            command += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        result = subprocess.run(command, capture_output=True, timeout=timeout + 5, text=True)
        text, _, status = result.stdout.rpartition("\n")
        return int(status or 0), text

    def place_once_readings_are_in(self, host: int, body: dict[str, Any],
                                   timeout: float = 60) -> tuple[int, str]:
        """POST /place_instance, asked again while the master refuses it only because some
        node's telemetry readings have not reached it yet (a 422 that says "still waiting
        for the readings"): right after an election, on a loaded machine, that can take a
        few seconds. Any other answer is returned as it is."""
        deadline = time.monotonic() + timeout
        while True:
            status, text = self.request_status(host, "POST", "/place_instance", body,
                                               timeout=timeout)
            pending = status == 422 and "still waiting for the readings" in text
            if not pending or time.monotonic() >= deadline:
                return status, text
            time.sleep(0.5)

    def isolate(self, host: int) -> None:
        """Unplug the host's link: a partition of it against everyone else."""
        self.network.isolate(host)

    def rejoin(self, host: int) -> None:
        self.network.rejoin(host)

    def wait(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        logs = "\n".join((self.root / f"node{h}.log").read_text(errors="replace")[-3000:]
                         for h in range(self.count))
        raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{logs}")

    def one_master(self, hosts: list[int]) -> str | None:
        """The master all `hosts` agree on, each seeing exactly `hosts` alive."""
        views = [self.request(h, "GET", "/cluster", timeout=5) for h in hosts]
        if any(v is None for v in views):
            return None
        masters = {v["master_node_id"] for v in views}
        if len(masters) != 1 or None in masters:
            return None
        if any(sum(n["alive"] for n in v["nodes"]) != len(hosts) for v in views):
            return None
        master: str = masters.pop()
        return master

    def chat_ok(self, host: int) -> bool:
        reply = self.request(host, "POST", "/v1/chat/completions", {
            "model": "smollm2-135m", "max_tokens": 4,
            "messages": [{"role": "user", "content": "Hi"}]})
        return reply is not None and bool(reply["choices"][0]["message"]["content"])
