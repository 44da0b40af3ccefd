"""Routers for tests: signed with a throwaway key, verified the insecure way."""

from skulk.routing.router import Router
from skulk.routing.transport import Transport
from skulk.shared.types.ids import NodeId
from skulk.trust.setup import ephemeral_trust


def signing_router(transport: Transport, *, namespace: str, node_id: NodeId) -> Router:
    trust = ephemeral_trust(node_id)
    return Router(transport, namespace=namespace, signer=trust.signer,
                  verifier=trust.verifier)
