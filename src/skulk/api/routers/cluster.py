"""`GET /cluster`: a small, stable summary of the cluster for people and scripts.

`/state` is the whole replicated State; this is what `skulk status` and scripts rely on:
`{"node_id", "master_node_id", "security", "nodes": [...], "instances": [...]}`;
`security` is `"tls"` (members hold certificates from the cluster's CA, every link is
mutual TLS and every message signed) or `"insecure"` (a node started with `--insecure`).
Each node lists its `addresses` and `reachable_peers`: the peers it reached in its latest
probe round, with the addresses that answered (best first) and their connect RTTs; its
`endpoints` (cluster endpoints in `--peer` form, API URL); and its `state`: `up`,
`stopping`, `stopped` (it left on purpose) or `gone` (lost without a word).
`isolated` is true on a node that belongs to a larger cluster but sees no other member
(`isolation_reason` says why it should see some), and `peers` / `peers_unreachable` tell
how its `--peer` endpoints fare.
"""

import time

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from skulk.api.context import ApiContext, Context
from skulk.api.errors import ApiError
from skulk.api.instance_view import instance_body
from skulk.api.node_health import node_health
from skulk.shared.partition import Standing
from skulk.shared.topology import TopologyEdge, topology
from skulk.shared.types.commands import ForgetMember, RevokeNode
from skulk.shared.types.ids import NodeId, new_command_id
from skulk.shared.types.telemetry import ClusterLinks, NodeEndpoints, NodeTelemetry

REVOKE_TIMEOUT_SECONDS = 10.0

router = APIRouter(tags=["cluster"])


class Revocation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node_id: NodeId = Field(description="The member to expel (see `GET /cluster`).",
                            min_length=1, max_length=128)


class Forgetting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node_id: NodeId = Field(description="A member gone for good.", min_length=1,
                            max_length=128)


@router.post("/cluster/forget", summary="Drop a member gone for good from the agreed "
             "membership (lets a side that will never see it again make changes)")
async def forget(body: Forgetting, context: Context) -> dict[str, object]:
    await context.requests.commands.send(ForgetMember(command_id=new_command_id(),
                                                      node_id=body.node_id))
    forgotten = await context.cluster.replica.wait_for(
        lambda state: body.node_id not in state.members, REVOKE_TIMEOUT_SECONDS)
    if forgotten is None:
        raise ApiError(503, "the master did not record it in time; retry",
                       code="forget_pending")
    return {"forgotten": body.node_id, "members": forgotten.members}


def _node_state(reading: NodeTelemetry | None, alive: bool) -> str:
    stopping = reading is not None and reading.stopping
    if alive:
        return "stopping" if stopping else "up"
    return "stopped" if stopping else "gone"


def _links(reading: NodeTelemetry | None) -> dict[str, object]:
    """This node's own view of its links, from its own latest reading."""
    links = reading.links if reading is not None else ClusterLinks()
    return {"isolated": links.isolated, "isolation_reason": links.reason,
            "peers": [link.model_dump(mode="json") for link in links.peers],
            "peers_unreachable": [link.endpoint for link in links.peers if not link.reachable
                                  and link.problem is not None]}


def _partition(context: ApiContext, live: set[NodeId]) -> dict[str, object]:
    standing = Standing(live=frozenset(live),
                        agreed=frozenset(context.cluster.replica.state.members))
    return {"agreed_members": sorted(standing.agreed), "majority": standing.majority,
            "quorum": context.settings.quorum,
            "reason": None if standing.majority else standing.describe()}


@router.post("/cluster/revoke", summary="Expel a member: its messages are refused at once, "
             "its TLS links from each member's next start")
async def revoke(body: Revocation, context: Context) -> dict[str, object]:
    if body.node_id == context.cluster.node_id:
        raise ApiError(400, "a node cannot revoke itself: ask another member",
                       code="invalid_request")
    await context.requests.commands.send(RevokeNode(command_id=new_command_id(),
                                                    node_id=body.node_id))
    revoked = await context.cluster.replica.wait_for(
        lambda state: body.node_id in state.revoked_nodes, REVOKE_TIMEOUT_SECONDS)
    if revoked is None:
        raise ApiError(503, "the master did not record the revocation in time; retry",
                       code="revocation_pending")
    return {"revoked": body.node_id,
            "next": "rotate the join token on the node that made the cluster "
                    "(`skulk cluster token --rotate`) so the expelled machine cannot rejoin"}


@router.get("/cluster", summary="Cluster summary: master, nodes with health, instances")
async def cluster(context: Context) -> dict[str, object]:
    state = context.cluster.replica.state
    readings = context.cluster.telemetry.live()
    live = set(context.cluster.live_nodes()) or {context.cluster.node_id}
    health = node_health(live | set(readings), readings, live, state, time.time())
    # Grouped once by node: a pass over every edge for each node was N passes over up to
    # N(N-1) edges, seconds at 200 nodes.
    edges_from: dict[NodeId, list[TopologyEdge]] = {}
    for edge in topology(readings).edges:
        edges_from.setdefault(edge.from_node, []).append(edge)
    nodes = []
    for node_id in sorted(live | set(readings)):
        reading = readings.get(node_id)
        nodes.append({
            "node_id": node_id,
            "alive": node_id in live,
            "state": _node_state(reading, node_id in live),
            "endpoints": (reading.endpoints if reading else NodeEndpoints()).model_dump(
                mode="json"),
            "api_url": reading.api_url if reading else None,
            "hostname": reading.hostname if reading else None,
            "has_worker": reading.has_worker if reading else None,
            "backends": reading.backends if reading else [],
            "memory_available_bytes": reading.memory_available_bytes if reading else None,
            "memory_total_bytes": reading.memory_total_bytes if reading else None,
            "gpus": [g.model_dump(mode="json") for g in reading.gpus] if reading else [],
            "warm": [w.model_dump(mode="json") for w in reading.warm] if reading else [],
            "drafters": reading.drafters if reading else [],
            "health": health[node_id]["level"],
            "health_reasons": health[node_id]["reasons"],
            "addresses": reading.reachability.addresses if reading else [],
            "reachable_peers": [
                {"node_id": e.to_node, "observed_at": e.observed_at,
                 "addresses": [a.model_dump(mode="json") for a in e.addresses]}
                for e in edges_from.get(node_id, [])],
        })
    return {
        "node_id": context.cluster.node_id,
        "master_node_id": context.cluster.master_node(),
        "security": "tls" if context.cluster.secure else "insecure",
        "partition": _partition(context, live),
        **_links(readings.get(context.cluster.node_id)),
        "session": context.cluster.replica.session,
        "nodes": nodes,
        "instances": [instance_body(state, i) for i in state.instances.values()],
        "tasks_in_flight": len(state.tasks),
    }
