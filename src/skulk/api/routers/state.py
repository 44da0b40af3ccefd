"""`GET /state`, `/node_id`, `/healthz`: what this node knows of the cluster."""

import time

from fastapi import APIRouter

from skulk.api.context import Cluster
from skulk.api.node_health import node_health
from skulk.shared.topology import topology

router = APIRouter(tags=["cluster"])


@router.get("/state", summary="The full replicated State, with telemetry and node health")
async def get_state(cluster: Cluster) -> dict[str, object]:
    """The replicated State, with live node telemetry and the observed topology (nodes,
    and directed edges with the addresses that answered and their RTTs) merged in."""
    body: dict[str, object] = cluster.replica.state.model_dump(mode="json")
    readings = cluster.telemetry.live()
    body["telemetry"] = {n: r.model_dump(mode="json") for n, r in readings.items()}
    body["topology"] = topology(readings).model_dump(mode="json")
    live = set(cluster.live_nodes()) or {cluster.node_id}
    body["node_health"] = node_health(live | set(readings), readings, live,
                                      cluster.replica.state, time.time())
    body["node_id"] = cluster.node_id
    body["session"] = cluster.replica.session
    return body


@router.get("/node_id", summary="This node's id and public key")
async def get_node_id(cluster: Cluster) -> dict[str, str]:
    return {"node_id": cluster.node_id, "public_key": cluster.public_key}


@router.get("/healthz", summary="Liveness of this node's API (needs no key)")
async def healthz(cluster: Cluster) -> dict[str, str]:
    return {"status": "ok", "node_id": cluster.node_id}
