"""`GET /events`: the last indexed events this node applied, newest last, for people."""

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from skulk.api.context import Cluster
from skulk.shared.types.ids import NodeId, SessionId

router = APIRouter(tags=["cluster"])

MAX_LIMIT = 1000


class EventRecordView(BaseModel):
    """One applied event, summarised."""

    seq: int = Field(description="This node's sequence number for the record, from 1; "
                     "it keeps counting across master sessions. Page with `after_seq`.")
    index: int = Field(description="The event's index in its master session's log.")
    session: SessionId = Field(description="Master session that indexed the event.")
    master_node: NodeId = Field(description="Master that indexed it.")
    kind: str = Field(description="Event type, e.g. `TaskCreated`.")
    origin: NodeId | None = Field(description="Node that proposed it; None for the master's own.")
    applied_at: float = Field(description="Unix time this node applied it.")
    summary: str = Field(description="Its ids and status on one line.")
    detail: str = Field(description="Its payload as JSON, cut to 2000 characters; a "
                        "snapshot shows counts instead of the whole State.")


class RecentEventsView(BaseModel):
    """Recent events and where the log stands."""

    node_id: NodeId = Field(description="The node that answered.")
    last_seq: int = Field(description="Sequence number of the newest record; 0 before any.")
    events: list[EventRecordView] = Field(description="Records after `after_seq`, oldest "
                                          "first, at most `limit` (the newest ones).")


@router.get("/events", response_model=RecentEventsView,
            summary="Recent indexed events this node applied (the last 1000 are kept)")
async def recent_events(
        cluster: Cluster,
        after_seq: int = Query(default=0, ge=0, description="Only records newer than this."),
        limit: int = Query(default=200, ge=1, le=MAX_LIMIT, description="At most this many."),
        kind: Annotated[list[str] | None,
                        Query(description="Only these event types (repeatable).")] = None,
) -> RecentEventsView:
    recent = cluster.replica.recent
    records = recent.query(after_seq=after_seq, limit=limit, kinds=set(kind or ()))
    return RecentEventsView(node_id=cluster.node_id, last_seq=recent.last_seq,
                            events=[EventRecordView(**r.as_json()) for r in records])
