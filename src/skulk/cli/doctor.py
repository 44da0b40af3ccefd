"""`skulk doctor`: what on this machine (and, with a running node, in its cluster) would
slow or break Skulk, as a table of OK/WARN/FAIL with the fix for each; exit 1 on a FAIL."""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skulk.cli.argument_types import port
from skulk.cli.endpoints import endpoint_port, normalized_endpoint
from skulk.paths import default_data_dir

if TYPE_CHECKING:
    from skulk.cli.doctor_checks import Check

DEFAULT_CLUSTER_PORT = 7447


def add_doctor_arguments(parser: argparse.ArgumentParser, default_url: str) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="the data dir to check (default: $SKULK_HOME or the XDG one)")
    parser.add_argument("--api-port", type=port, default=52415,
                        help="the API port a node here would use (default 52415)")
    parser.add_argument("--listen", default=f"tcp/0.0.0.0:{DEFAULT_CLUSTER_PORT}",
                        help="the cluster endpoint a node here would listen on "
                             f"(default tcp/0.0.0.0:{DEFAULT_CLUSTER_PORT})")
    parser.add_argument("--url", default=default_url,
                        help="a running node, for the cluster checks (peers' clocks, "
                             "ports, authentication)")
    parser.add_argument("--no-cluster", action="store_true",
                        help="check only this machine, not a running node's cluster")


def table(checks: "list[Check]") -> str:
    """The checks as aligned columns: level, what, what was found, and the fix."""
    width = max(len(check.name) for check in checks)
    lines = []
    for check in checks:
        fix = f"  -> {check.fix}" if check.fix and check.level != "OK" else ""
        lines.append(f"{check.level:<4}  {check.name:<{width}}  {check.detail}{fix}")
    return "\n".join(lines)


def run_doctor(args: argparse.Namespace) -> int:
    # Imported when run: the checks load the node's configuration (its API and engines),
    # which building the parser for every other command should not.
    from skulk.cli.doctor_checks import machine_checks
    from skulk.cli.doctor_cluster import cluster_checks

    listen_port = endpoint_port(normalized_endpoint(args.listen, "--listen"))
    ports = [(args.api_port, "API", "--api-port")]
    if listen_port:
        ports.append((listen_port, "cluster", "--listen"))
    checks = machine_checks(args.data_dir or default_data_dir(), ports)
    if not args.no_cluster:
        checks += cluster_checks(args.url)
    print(table(checks))
    failed = sum(check.level == "FAIL" for check in checks)
    warned = sum(check.level == "WARN" for check in checks)
    print(f"\n{failed} failed, {warned} warnings, {len(checks) - failed - warned} ok")
    return 1 if failed else 0
