"""`skulk logs` and `skulk stop`: a running node's log and its shutdown, over its API
(with `$SKULK_API_KEY` when the node wants a key, like every client command)."""

import argparse
import sys
import time
from datetime import datetime
from typing import Any

from skulk.api.log_buffer import LEVELS
from skulk.cli.argument_types import positive_int
from skulk.cli.node_http import NodeUnreachable, print_error, request_node

FOLLOW_POLL_SECONDS = 1.0
STOP_WAIT_SECONDS = 60.0


def add_logs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--level", default="INFO", type=str.upper, choices=list(LEVELS),
                        help="the least severe level shown (default INFO)")
    parser.add_argument("--component", default=None,
                        help="only lines from this part of Skulk, e.g. worker, api, master, "
                             "or a module such as skulk.worker.worker")
    parser.add_argument("-n", "--lines", type=positive_int, default=50, metavar="N",
                        help="how many recent lines to show first (default 50)")
    parser.add_argument("-f", "--follow", action="store_true",
                        help="keep printing new lines until Ctrl-C")


def log_line_text(line: dict[str, Any]) -> str:
    stamp = datetime.fromtimestamp(line["time"]).strftime("%H:%M:%S.%f")[:-3]
    return f"{stamp} {line['level']: <7} {line['component']}: {line['message']}"


def logs(url: str, level: str, component: str | None, lines: int, follow: bool) -> int:
    """Print the node's last `lines` lines, then (with `follow`) new ones as they come."""
    after, limit = 0, max(1, min(lines, 2000))
    try:
        while True:
            params: dict[str, str | int] = {"after": after, "level": level, "limit": limit}
            if component:
                params["component"] = component
            response = request_node("GET", f"{url}/v1/logs", params=params)
            if response.status_code != 200:
                return print_error(response)
            page = response.json()
            for line in page["lines"]:
                print(log_line_text(line), flush=True)
            after, limit = page["last_seq"], 2000
            if not follow:
                return 0
            time.sleep(FOLLOW_POLL_SECONDS)
    except KeyboardInterrupt:
        return 0
    except NodeUnreachable:
        if after and follow:
            print("skulk: the node stopped", file=sys.stderr)
            return 0
        raise


def stop(url: str, wait_seconds: float = STOP_WAIT_SECONDS) -> int:
    """Ask the node to shut down, then wait (bounded) until its API goes quiet."""
    response = request_node("POST", f"{url}/v1/node/stop")
    if response.status_code != 202:
        return print_error(response)
    node = response.json()["node_id"]
    print(f"node {node} is stopping", flush=True)
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        try:
            request_node("GET", f"{url}/healthz")
        except NodeUnreachable:
            print(f"node {node} stopped")
            return 0
        time.sleep(0.2)
    print(f"skulk: node {node} still answers after {wait_seconds:.0f} s", file=sys.stderr)
    return 1
