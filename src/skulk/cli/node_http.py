"""CLI subcommands that talk to a running node over its HTTP API.

A node started with an API key needs it here too: `SKULK_API_KEY=<key> skulk status`.
"""

import os
import sys
from collections.abc import Callable
from typing import Any

import httpx


class NodeUnreachable(Exception):
    """No node answers at the URL."""


def auth_headers() -> dict[str, str]:
    """The API key from `$SKULK_API_KEY` (its first, when it lists several)."""
    key = os.environ.get("SKULK_API_KEY", "").split(",")[0].strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def request_node(method: str, url: str, **kwargs: Any) -> httpx.Response:
    try:
        return httpx.request(method, url, timeout=httpx.Timeout(600.0, connect=5.0),
                             headers=auth_headers(), **kwargs)
    except httpx.TransportError as error:
        raise NodeUnreachable(
            f"no Skulk node answers at {url} ({error}); start one with `skulk run`") from error


def print_error(response: httpx.Response) -> int:
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text
    print(f"skulk: {response.status_code}: {message}", file=sys.stderr)
    return 1


def status(url: str, every_node: bool = False) -> int:
    from skulk.cli.status_view import status_lines

    response = request_node("GET", f"{url}/cluster")
    if response.status_code != 200:
        return print_error(response)
    for line in status_lines(response.json(), every_node=every_node):
        print(line)
    return 0


def revoke(url: str, node_id: str) -> int:
    return _membership_action(url, "revoke", node_id, lambda body: f"revoked {node_id}; "
                              f"{body['next']}")


def forget(url: str, node_id: str) -> int:
    return _membership_action(url, "forget", node_id, lambda body: f"forgot {node_id}; "
                              f"agreed members: {', '.join(body['members'])}")


def _membership_action(url: str, action: str, node_id: str,
                       said: Callable[[dict[str, Any]], str]) -> int:
    response = request_node("POST", f"{url}/cluster/{action}", json={"node_id": node_id})
    if response.status_code != 200:
        return print_error(response)
    print(said(response.json()))
    return 0


def models_in_cluster(url: str) -> int:
    """`skulk models list --cluster`: every node's store, as the node at `url` sees it."""
    from skulk.cli.models_list import cluster_lines
    from skulk.shared.types.ids import NodeId
    from skulk.shared.types.telemetry import NodeTelemetry

    response = request_node("GET", f"{url}/state")
    if response.status_code != 200:
        return print_error(response)
    readings = {NodeId(node): NodeTelemetry.model_validate(reading)
                for node, reading in response.json()["telemetry"].items()}
    for line in cluster_lines(readings):
        print(line)
    return 0
