"""Asking every other live node's API for the same path (cluster-wide diagnostics and
traces). A peer's API URL comes from its telemetry; the caller's API key is passed on."""

import anyio
import httpx
from fastapi import Request

from skulk.api.context import ApiContext
from skulk.shared.types.ids import NodeId

PEER_TIMEOUT_SECONDS = 5.0


async def ask_peers(request: Request, path: str,
                    ) -> tuple[dict[NodeId, object], dict[NodeId, str]]:
    """Each peer's JSON answer to `GET path`, and why the others did not answer."""
    context: ApiContext = request.app.state.context
    readings = context.telemetry.live()
    auth = {k: v for k, v in request.headers.items() if k in ("authorization", "x-api-key")}
    answers: dict[NodeId, object] = {}
    errors: dict[NodeId, str] = {}

    async def ask(client: httpx.AsyncClient, node_id: NodeId) -> None:
        reading = readings.get(node_id)
        if reading is None or reading.api_url is None:
            errors[node_id] = "the node serves no API (or its telemetry has not arrived)"
            return
        try:
            reply = await client.get(f"{reading.api_url}{path}", headers=auth)
            reply.raise_for_status()
            answers[node_id] = reply.json()
        except (httpx.HTTPError, ValueError) as error:
            errors[node_id] = f"{type(error).__name__}: {error}"

    async with httpx.AsyncClient(timeout=PEER_TIMEOUT_SECONDS) as client, \
            anyio.create_task_group() as tasks:
        for node_id in sorted(context.live_nodes()):
            if node_id != context.node_id:
                tasks.start_soon(ask, client, node_id)
    return answers, errors
