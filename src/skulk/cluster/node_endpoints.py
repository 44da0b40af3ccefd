"""Where this node listens, as bound, in the forms people type: the cluster endpoints a
peer's `--peer` names and the API's URL. Every node's readings carry them, so `skulk
status`, `skulk doctor` and `GET /cluster` show each node's real ports."""

import ipaddress

from skulk.routing.transport import ListensOnEndpoints
from skulk.shared.types.telemetry import NodeEndpoints


def peer_form(bound: list[str]) -> list[str]:
    """Bound transport endpoints (`tls/127.0.0.1:7447`, `tcp/[::1]:7447#iface=lo`) as
    `--peer` takes them: `--peer` is always `tcp/` (a TLS cluster upgrades it itself)."""
    endpoints = []
    for endpoint in bound:
        protocol, slash, address = endpoint.partition("/")
        if not slash or protocol not in ("tcp", "tls"):
            continue
        form = f"tcp/{address.split('#', 1)[0]}"
        if form not in endpoints:
            endpoints.append(form)
    return endpoints


def api_endpoint(host: str, port: int, advertised: str | None) -> str:
    """The URL to show for the API: the one peers are told, else the one it bound (a
    loopback URL answers on its own machine only, which is still where to point curl)."""
    if advertised is not None:
        return advertised
    try:
        bracketed = ipaddress.ip_address(host).version == 6
    except ValueError:
        bracketed = False
    return f"http://[{host}]:{port}" if bracketed else f"http://{host}:{port}"


async def bound_cluster_endpoints(transport: object) -> list[str]:
    """The transport's endpoints as bound, in `--peer` form; none from a transport that
    cannot say (the in-memory bus)."""
    if not isinstance(transport, ListensOnEndpoints):
        return []
    return peer_form(await transport.listen_endpoints())


def node_endpoints(cluster: list[str], api_host: str, api_port: int,
                   advertised_api: str | None, serves_api: bool) -> NodeEndpoints:
    return NodeEndpoints(cluster=cluster, api=api_endpoint(api_host, api_port, advertised_api)
                         if serves_api else None)
