"""The API URL a node tells its peers: one they can actually reach, or none."""

import ipaddress
from collections.abc import Sequence


def advertised_api_url(api_host: str, api_port: int, own_addresses: Sequence[str]
                       ) -> str | None:
    """A loopback API is reachable only from its own machine, so it is not advertised;
    an API on every interface is advertised at the node's first non-loopback address."""
    try:
        address = ipaddress.ip_address(api_host)
    except ValueError:
        return None if api_host == "localhost" else f"http://{api_host}:{api_port}"
    if address.is_loopback:
        return None
    if address.is_unspecified:
        reachable = [a for a in own_addresses if not ipaddress.ip_address(a).is_loopback]
        if not reachable:
            return None
        address = ipaddress.ip_address(reachable[0])
    host = f"[{address}]" if address.version == 6 else str(address)
    return f"http://{host}:{api_port}"
