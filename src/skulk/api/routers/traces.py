"""Tracing: the toggle, this node's traces (Chrome trace format, stats, raw spans), and
the cluster variants that look for traces on every live node."""

from urllib.parse import quote

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from skulk.api.context import ApiContext, Context
from skulk.api.errors import ApiError
from skulk.api.peers import ask_peers
from skulk.api.tracing import RequestTrace, chrome_trace, trace_stats
from skulk.shared.types.ids import CommandId, NodeId

router = APIRouter(tags=["tracing"])


class TracingToggle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(description="Trace every request from now on, or stop.")


def _trace(context: ApiContext, trace_id: CommandId) -> RequestTrace:
    trace = context.requests.traces.get(trace_id)
    if trace is None:
        raise ApiError(404, f"no trace '{trace_id}' on this node (traces live on the node "
                       "that took the request; try /v1/cluster/traces/{id})",
                       code="trace_not_found")
    return trace


@router.get("/v1/tracing", summary="Whether requests are being traced")
async def tracing_state(context: Context) -> dict[str, bool]:
    return {"enabled": context.requests.traces.enabled}


@router.post("/v1/tracing", summary="Switch request tracing on or off on this node")
async def set_tracing(body: TracingToggle, context: Context) -> dict[str, bool]:
    context.requests.traces.enabled = body.enabled
    return {"enabled": body.enabled}


@router.get("/v1/traces", summary="This node's traces, newest last")
async def list_traces(context: Context) -> dict[str, object]:
    return {"node_id": context.cluster.node_id,
            "traces": [trace.summary() for trace in context.requests.traces.all()]}


@router.get("/v1/traces/{trace_id}", summary="One trace in Chrome's trace-event format")
async def get_trace(trace_id: CommandId, context: Context) -> dict[str, object]:
    return chrome_trace(_trace(context, trace_id))


@router.get("/v1/traces/{trace_id}/stats", summary="Durations by span and decode speed")
async def get_trace_stats(trace_id: CommandId, context: Context) -> dict[str, object]:
    return trace_stats(_trace(context, trace_id))


@router.get("/v1/traces/{trace_id}/raw", summary="One trace's spans as recorded")
async def get_trace_raw(trace_id: CommandId, context: Context) -> dict[str, object]:
    trace = _trace(context, trace_id)
    return {**trace.summary(), "spans": [span.model_dump() for span in trace.spans]}


@router.get("/v1/cluster/traces", summary="Traces on every live node")
async def cluster_traces(context: Context) -> dict[str, object]:
    nodes: dict[NodeId, object] = {
        context.cluster.node_id: [trace.summary() for trace in context.requests.traces.all()]}
    answers, _ = await ask_peers(context, "/v1/traces")
    for node_id, answer in answers.items():
        nodes[node_id] = answer.get("traces", []) if isinstance(answer, dict) else []
    return {"nodes": nodes}


@router.get("/v1/cluster/traces/{trace_id}",
            summary="One trace (Chrome format), from whichever node holds it")
async def cluster_trace(trace_id: CommandId, context: Context) -> dict[str, object]:
    local = context.requests.traces.get(trace_id)
    if local is not None:
        return chrome_trace(local)
    path = f"/v1/traces/{quote(trace_id, safe='')}"
    answers, _ = await ask_peers(context, path)
    for answer in answers.values():
        if isinstance(answer, dict):
            return answer
    raise ApiError(404, f"no live node holds trace '{trace_id}'", code="trace_not_found")
