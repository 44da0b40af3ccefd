"""`GET /state`, `/node_id`, `/healthz`: what this node knows of the cluster."""

import time

from fastapi import APIRouter

from skulk.api.context import Context
from skulk.api.node_health import node_health
from skulk.shared.topology import topology

router = APIRouter(tags=["cluster"])


@router.get("/state", summary="The full replicated State, with telemetry and node health")
async def get_state(context: Context) -> dict[str, object]:
    """The replicated State, with live node telemetry and the observed topology (nodes,
    and directed edges with the addresses that answered and their RTTs) merged in."""
    body: dict[str, object] = context.replica.state.model_dump(mode="json")
    readings = context.telemetry.live()
    body["telemetry"] = {n: r.model_dump(mode="json") for n, r in readings.items()}
    body["topology"] = topology(readings).model_dump(mode="json")
    live = set(context.live_nodes()) or {context.node_id}
    body["node_health"] = node_health(live | set(readings), readings, live,
                                      context.replica.state, time.time())
    body["node_id"] = context.node_id
    body["session"] = context.replica.session
    return body


@router.get("/node_id", summary="This node's id and public key")
async def get_node_id(context: Context) -> dict[str, str]:
    return {"node_id": context.node_id, "public_key": context.public_key}


@router.get("/healthz", summary="Liveness of this node's API (needs no key)")
async def healthz(context: Context) -> dict[str, str]:
    return {"status": "ok", "node_id": context.node_id}
