"""`skulk doctor --url`: checks that need a running node, about the cluster it is in:
its endpoints and links (`doctor_links`), each peer's clock, API and cluster ports, and
whether the cluster plane is authenticated."""

import socket
import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from skulk.cli.doctor_checks import Check, Level
from skulk.cli.doctor_links import endpoints_check, links_checks, partition_check
from skulk.cli.node_http import NodeUnreachable, request_node

# Cards live 30 s and certificates check validity times: seconds of skew already matter.
CLOCK_WARN_SECONDS = 2.0
CLOCK_FAIL_SECONDS = 30.0
PROBE_TIMEOUT_SECONDS = 3.0


def cluster_checks(url: str) -> list[Check]:
    """The running node at `url` and its peers; none answering skips them (a machine
    with no node yet is not wrong)."""
    try:
        cluster = request_node("GET", f"{url}/cluster").json()
        state = request_node("GET", f"{url}/state").json()
    except (NodeUnreachable, ValueError):
        return [Check("running node", "OK", f"none at {url}: no cluster checks (start a "
                      "node, or give another's --url)")]
    checks = [Check("running node", "OK", f"{cluster['node_id']} at {url}"),
              plane_security(cluster.get("security", "tls")), endpoints_check(cluster),
              *links_checks(cluster), partition_check(cluster)]
    own = cluster["node_id"]
    for node in cluster["nodes"]:
        if node["node_id"] == own or not node["alive"]:
            continue
        reading = state.get("telemetry", {}).get(node["node_id"], {})
        checks += peer_checks(node["node_id"], node.get("api_url"), reading)
    return checks


def plane_security(security: str) -> Check:
    if security == "tls":
        return Check("cluster plane", "OK", "mutual TLS with member certificates")
    return Check("cluster plane", "WARN", "plain TCP (--insecure): anyone who reaches a node "
                 "joins the cluster", "restart the nodes without --insecure and --join them")


def peer_checks(node_id: str, api_url: str | None, reading: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    if api_url:
        checks.append(peer_api_and_clock(node_id, api_url))
    reach = reading.get("reachability", {})
    every = reach.get("addresses", [])
    # Loopback only proves something for a peer on this very machine.
    addresses = [a for a in every if not a.startswith("127.") and a != "::1"] or every
    for port in reach.get("listen_ports", []):
        reached = [a for a in addresses if tcp_reachable(a, port)]
        name = f"peer {node_id} port {port}"
        checks.append(Check(name, "OK", f"reached on {reached[0]}") if reached else
                      Check(name, "FAIL",
                            f"not reachable on {', '.join(addresses) or 'any address'}",
                            "open the port in that machine's firewall, or check its --listen"))
    return checks


def peer_api_and_clock(node_id: str, api_url: str) -> Check:
    """The peer's API answers, and its clock (its HTTP `Date`) agrees with ours."""
    name = f"peer {node_id} API"
    sent = time.time()
    try:
        answer = httpx.get(f"{api_url}/healthz", timeout=PROBE_TIMEOUT_SECONDS)
    except httpx.HTTPError as error:
        return Check(name, "FAIL", f"{api_url} does not answer ({type(error).__name__})",
                     "check that machine's firewall and its --api-host")
    offset = clock_offset(answer.headers.get("date"), sent, time.time())
    if offset is None or abs(offset) < CLOCK_WARN_SECONDS:
        return Check(name, "OK", f"{api_url}, clock within {CLOCK_WARN_SECONDS:.0f} s")
    level: Level = "FAIL" if abs(offset) >= CLOCK_FAIL_SECONDS else "WARN"
    return Check(name, level, f"{api_url}, clock {offset:+.0f} s off ours",
                 "run NTP (e.g. systemd-timesyncd or chrony) on both machines")


def clock_offset(date_header: str | None, sent: float, received: float) -> float | None:
    """How far the peer's clock is ahead of ours, from its one-second `Date` header."""
    if not date_header:
        return None
    try:
        theirs = parsedate_to_datetime(date_header).timestamp()
    except (TypeError, ValueError):
        return None
    # The header truncates to the second: its middle is the best guess.
    return theirs + 0.5 - (sent + received) / 2


def tcp_reachable(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=PROBE_TIMEOUT_SECONDS):
            return True
    except OSError:
        return False
