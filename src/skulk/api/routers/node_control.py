"""This node's own log and its shutdown: `GET /v1/logs` (what `skulk logs` follows) and
`POST /v1/node/stop` (`skulk stop`), behind the API key like every other route."""

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Query
from pydantic import BaseModel, Field

from skulk.api.context import Cluster, Operations
from skulk.api.errors import ApiError
from skulk.api.log_buffer import LEVELS, LogLine

router = APIRouter(tags=["operations"])


class LogPage(BaseModel):
    lines: list[LogLine] = Field(description="The lines asked for, oldest first.")
    last_seq: int = Field(description="The newest line's number: pass it as `after` to get "
                          "only what follows.")


@router.get("/v1/logs", summary="This node's recent log lines (a bounded in-memory tail)")
async def logs(operations: Operations,
               after: Annotated[int, Query(ge=0, description="Only lines after this one.")] = 0,
               level: Annotated[str, Query(description="The least severe level wanted, "
                                           "e.g. WARNING.")] = "INFO",
               component: Annotated[str | None, Query(
                   max_length=200, description="Only lines from this module or package, "
                   "e.g. `worker` or `skulk.api`.")] = None,
               limit: Annotated[int, Query(ge=1, le=2000)] = 200) -> LogPage:
    if level.upper() not in LEVELS:
        raise ApiError(400, f"unknown level '{level}': one of {', '.join(LEVELS)}",
                       param="level", code="invalid_value")
    logs = operations.logs
    return LogPage(lines=logs.lines(after=after, level=level, component=component, limit=limit),
                   last_seq=logs.last_seq)


@router.post("/v1/node/stop", status_code=202,
             summary="Shut this node down gracefully, as SIGTERM does")
async def stop(operations: Operations, cluster: Cluster,
               background: BackgroundTasks) -> dict[str, str]:
    background.add_task(operations.request_stop)  # after the answer has gone out
    return {"node_id": cluster.node_id, "status": "stopping"}
