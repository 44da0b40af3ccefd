"""Asking other live nodes for one of their peer-readable paths (cluster-wide
diagnostics, traces and history), over the cluster transport: see `peer_reads`."""

import json

import anyio

from skulk.api.context import ApiContext
from skulk.api.peer_reads import ANSWER_TIMEOUT_SECONDS
from skulk.shared.types.ids import NodeId


async def ask_peer(context: ApiContext, node_id: NodeId, path: str
                   ) -> tuple[object, None] | tuple[None, str]:
    """One peer's JSON answer to `path`, or why there is none: (answer, None) or
    (None, why)."""
    reply = await context.operations.ask_peer(node_id, path.encode(), ANSWER_TIMEOUT_SECONDS)
    if reply is None:
        return None, (f"no signed answer within {ANSWER_TIMEOUT_SECONDS:.0f} s (the node "
                      "serves no API, or is unreachable)")
    try:
        answer = json.loads(reply)
        status, body = answer["status"], answer["body"]
    except (ValueError, KeyError, TypeError):
        return None, "malformed answer"
    return (body, None) if status == 200 else (None, f"{status}: {body}")


async def ask_peers(context: ApiContext, path: str,
                    ) -> tuple[dict[NodeId, object], dict[NodeId, str]]:
    """Each peer's JSON answer to `path`, and why the others did not answer."""
    answers: dict[NodeId, object] = {}
    errors: dict[NodeId, str] = {}

    async def ask(node_id: NodeId) -> None:
        answer, why_not = await ask_peer(context, node_id, path)
        if why_not is not None:
            errors[node_id] = why_not
        else:
            answers[node_id] = answer

    async with anyio.create_task_group() as tasks:
        for node_id in sorted(context.cluster.live_nodes()):
            if node_id != context.cluster.node_id:
                tasks.start_soon(ask, node_id)
    return answers, errors
