"""`GET /state`, `/node_id`, `/healthz`: what this node knows of the cluster."""

import time

from fastapi import APIRouter, Request

from skulk.api.context import ApiContext
from skulk.api.node_health import node_health

router = APIRouter(tags=["cluster"])


@router.get("/state")
async def get_state(request: Request) -> dict[str, object]:
    """The replicated State, with live node telemetry merged in."""
    context: ApiContext = request.app.state.context
    body: dict[str, object] = context.replica.state.model_dump(mode="json")
    readings = context.telemetry.live()
    body["telemetry"] = {n: r.model_dump(mode="json") for n, r in readings.items()}
    live = set(context.live_nodes()) or {context.node_id}
    body["node_health"] = node_health(live | set(readings), readings, live,
                                      context.replica.state, time.time())
    body["node_id"] = context.node_id
    body["session"] = context.replica.session
    return body


@router.get("/node_id")
async def get_node_id(request: Request) -> dict[str, str]:
    context: ApiContext = request.app.state.context
    return {"node_id": context.node_id}


@router.get("/healthz")
async def healthz(request: Request) -> dict[str, str]:
    context: ApiContext = request.app.state.context
    return {"status": "ok", "node_id": context.node_id}
