"""`GET /metrics`: Prometheus exposition of the node's and its requests' measures."""

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from skulk.api.context import Operations

router = APIRouter(tags=["operations"])


@router.get("/metrics", summary="Prometheus metrics of this node", response_class=Response)
async def metrics(operations: Operations) -> Response:
    return Response(operations.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
