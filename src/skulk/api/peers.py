"""Asking every other live node for one of its peer-readable paths (cluster-wide
diagnostics and traces), over the cluster transport: see `peer_reads`."""

import json

import anyio

from skulk.api.context import ApiContext
from skulk.api.peer_reads import ANSWER_TIMEOUT_SECONDS
from skulk.shared.types.ids import NodeId


async def ask_peers(context: ApiContext, path: str,
                    ) -> tuple[dict[NodeId, object], dict[NodeId, str]]:
    """Each peer's JSON answer to `path`, and why the others did not answer."""
    answers: dict[NodeId, object] = {}
    errors: dict[NodeId, str] = {}

    async def ask(node_id: NodeId) -> None:
        reply = await context.operations.ask_peer(node_id, path.encode(), ANSWER_TIMEOUT_SECONDS)
        if reply is None:
            errors[node_id] = ("no signed answer within "
                               f"{ANSWER_TIMEOUT_SECONDS:.0f} s (the node serves no API, "
                               "or is unreachable)")
            return
        try:
            answer = json.loads(reply)
            status, body = answer["status"], answer["body"]
        except (ValueError, KeyError, TypeError):
            errors[node_id] = "malformed answer"
            return
        if status == 200:
            answers[node_id] = body
        else:
            errors[node_id] = f"{status}: {body}"

    async with anyio.create_task_group() as tasks:
        for node_id in sorted(context.cluster.live_nodes()):
            if node_id != context.cluster.node_id:
                tasks.start_soon(ask, node_id)
    return answers, errors
