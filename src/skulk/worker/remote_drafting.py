"""How this node's runners reach another node's drafter: through this node's own Zenoh
endpoint (loopback first), with this node's certificate on a secure cluster."""

from pathlib import Path

from skulk.routing.router import Router
from skulk.routing.transport import ListensOnEndpoints, Transport
from skulk.shared.types.drafting import DRAFT_SERVICE
from skulk.shared.types.ids import NodeId


async def remote_drafting_options(transport: Transport, router: Router, drafter_node: NodeId,
                                  data_dir: Path | None) -> dict[str, str]:
    """Engine options for a remote drafter on `drafter_node`; nothing on a transport
    without endpoints. `data_dir`: whose certificate opens the link (None: insecure)."""
    if not isinstance(transport, ListensOnEndpoints):
        return {}
    endpoints = await transport.listen_endpoints()
    local = [e for e in endpoints if "/127.0.0.1:" in e] or endpoints
    if not local:
        return {}
    options = {"drafter_key": router.service_key(DRAFT_SERVICE, drafter_node),
               "cluster_connect": ",".join(local)}
    if data_dir is not None:
        options["cluster_data_dir"] = str(data_dir)
    return options
