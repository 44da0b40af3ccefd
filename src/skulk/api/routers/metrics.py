"""`GET /metrics`: Prometheus exposition of the node's and its requests' measures."""

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from skulk.api.context import ApiContext

router = APIRouter(tags=["operations"])


@router.get("/metrics", summary="Prometheus metrics of this node", response_class=Response)
async def metrics(request: Request) -> Response:
    context: ApiContext = request.app.state.context
    return Response(context.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
