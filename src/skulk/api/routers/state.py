"""`GET /state`, `/node_id`, `/healthz`: what this node knows of the cluster."""

from fastapi import APIRouter, Request

from skulk.api.context import ApiContext

router = APIRouter(tags=["cluster"])


@router.get("/state")
async def get_state(request: Request) -> dict[str, object]:
    """The replicated State, with live node telemetry merged in."""
    context: ApiContext = request.app.state.context
    body: dict[str, object] = context.replica.state.model_dump(mode="json")
    body["telemetry"] = {n: r.model_dump(mode="json") for n, r in context.telemetry.live().items()}
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
