"""`GET /v1/history`: the last hour of the cluster for charts — through any node.

The answer holds the cluster's series (every node's samples added up per time slot),
each instance's (the requests all nodes took for it), each node's latest sample (to find
the one to look at among many), and markers from the event log; one node's whole series
is `GET /v1/history/nodes/{node_id}`. A series is columns: `t` (Unix seconds, one per
sample interval) and one list per measure, `null` where there is nothing to say (no
first token in that interval, no p95). With `since`, the series hold only the slots after
it: a chart that polls keeps what it has and replaces the last few slots (a node's sample
may arrive a moment after the others').
"""

from typing import Annotated

from fastapi import APIRouter, Query

from skulk.api.context import ApiContext, Context
from skulk.api.errors import ApiError
from skulk.api.history.cluster import NODE_PATH
from skulk.api.history.samples import SAMPLE_INTERVAL_SECONDS, WINDOW_SECONDS
from skulk.api.history.series import cluster_series, instance_series, node_series, slot_of
from skulk.api.peers import ask_peer
from skulk.shared.types.ids import NodeId

router = APIRouter(tags=["operations"])


async def _refreshed(context: ApiContext) -> dict[NodeId, str]:
    """Bring the copies of the peers' samples up to date; why some did not answer."""
    own = context.cluster.node_id
    peers = [n for n in context.cluster.live_nodes() if n != own]
    return await context.operations.history.refresh(
        peers, lambda node_id, path: ask_peer(context, node_id, path))


@router.get(NODE_PATH, summary="This node's raw samples and markers newer than `since` "
            "(what peers read to build the cluster's history)")
async def node_history(context: Context,
                       since: Annotated[float, Query(ge=0)] = 0.0) -> dict[str, object]:
    return {"node_id": context.cluster.node_id,
            **context.operations.history.own.answer(since)}


@router.get("/v1/history", summary="The last hour of the cluster: series for the whole "
            "cluster and each instance, each node's latest sample, and markers")
async def cluster_history(context: Context,
                          since: Annotated[float, Query(ge=0, description=(
                              "Only the series' time slots after this (Unix seconds), for a "
                              "reader that holds the earlier ones"))] = 0.0,
                          ) -> dict[str, object]:
    errors = await _refreshed(context)
    history = context.operations.history
    by_node = history.node_samples(context.cluster.node_id)
    newer = {node_id: [s for s in samples if slot_of(s.at) > since]
             for node_id, samples in by_node.items()}
    instances = [s for s in history.instance_samples() if slot_of(s.at) > since]
    return {
        "node_id": context.cluster.node_id,
        "interval_seconds": SAMPLE_INTERVAL_SECONDS,
        "window_seconds": WINDOW_SECONDS,
        "since": since,
        "cluster": cluster_series(newer),
        "instances": [{"instance_id": instance_id, "model_id": model_id, "series": series}
                      for instance_id, (model_id, series)
                      in instance_series(instances).items()],
        "nodes": [{"node_id": node_id,
                   "latest": node_series(samples[-1:]) if samples else None,
                   "runner_restarts": sum(s.runner_restarts for s in samples)}
                  for node_id, samples in by_node.items()],
        "markers": [m.as_json() for m in history.markers()],
        "errors": errors,
    }


@router.get("/v1/history/nodes/{node_id}", summary="The last hour of one node's series")
async def one_node_history(node_id: str, context: Context) -> dict[str, object]:
    await _refreshed(context)
    samples = context.operations.history.node_samples(context.cluster.node_id).get(
        NodeId(node_id))
    if samples is None:
        raise ApiError(404, f"no history of node {node_id} here: it is not a live member, "
                       "or has sampled nothing yet", code="not_found")
    return {"node_id": node_id, "series": node_series(samples),
            "markers": [m.as_json() for m in context.operations.history.markers()
                        if m.node_id in (None, node_id)]}
