"""Skulk nodes on test hosts made of network namespaces (`../shared/tools/netns-hosts`)."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from skulk.testing.cluster_trust import make_member

TOOL = Path(__file__).resolve().parents[2] / "shared" / "tools" / "netns-hosts"
API_PORT = 52415
TRANSPORT_PORT = 7447


def available() -> str | None:
    """Why these tests cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not TOOL.exists():
        return f"{TOOL} is missing"
    return None


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
        self.prefix = f"sk{os.getpid() % 10000}"
        self.processes: list[subprocess.Popen[bytes]] = []

    def address(self, host: int) -> str:
        return f"10.77.0.{host + 1}"

    def api_host(self, host: int) -> str:
        return self.address(host) if self.api_on_host_address else "127.0.0.1"

    def namespace(self, host: int) -> str:
        return f"{self.prefix}-n{host}"

    def __enter__(self) -> "NetnsCluster":
        subprocess.run([str(TOOL), "up", str(self.count), self.prefix], check=True)
        cluster_name = f"netns-{self.prefix}"
        for host in range(self.count):
            peers = [arg for other in range(self.count) if other != host for arg in
                     ("--peer", f"tcp/{self.address(other)}:{TRANSPORT_PORT}")]
            log = (self.root / f"node{host}.log").open("ab")
            # Members of one cluster: certificates from one test authority.
            anyio.run(make_member, self.root / "authority", self.root / f"node{host}")
            self.processes.append(subprocess.Popen(
                ["ip", "netns", "exec", self.namespace(host), sys.executable, "-m",
                 "skulk.cli.main", "run", "--api-host", self.api_host(host), "--api-port",
                 str(API_PORT), "--listen", f"tcp/{self.address(host)}:{TRANSPORT_PORT}",
                 *peers, "--no-discover", "--namespace", cluster_name,
                 "--data-dir", str(self.root / f"node{host}"), *self.extra_args],
                stdout=log, stderr=subprocess.STDOUT))
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        subprocess.run([str(TOOL), "down", self.prefix], check=False)

    def request(self, host: int, method: str, path: str,
                body: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        """An HTTP request from inside the host's namespace; None when it fails."""
        command = ["ip", "netns", "exec", self.namespace(host), "curl", "-s", "-f",
                   "-m", str(timeout), "-X", method,
                   f"http://{self.api_host(host)}:{API_PORT}{path}"]
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
        command = ["ip", "netns", "exec", self.namespace(host), "curl", "-s", "-o", "-",
                   "-w", "\n%{http_code}", "-m", str(timeout), "-X", method,
                   f"http://{self.api_host(host)}:{API_PORT}{path}"]
        if body is not None:
            command += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        result = subprocess.run(command, capture_output=True, timeout=timeout + 5, text=True)
        text, _, status = result.stdout.rpartition("\n")
        return int(status or 0), text

    def cut(self, host: int) -> None:
        subprocess.run([str(TOOL), "cut", str(host), self.prefix], check=True)

    def heal(self, host: int) -> None:
        subprocess.run([str(TOOL), "heal", str(host), self.prefix], check=True)

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
