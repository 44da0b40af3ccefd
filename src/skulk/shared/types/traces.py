"""Trace spans: timed steps of one request, from any node and rank."""

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import CommandId, NodeId


class Span(WireModel):
    """One timed step (wall clock of the node that measured it)."""

    name: str = Field(description="What was timed, e.g. `runner.prefill`.")
    node_id: NodeId = Field(description="Node that measured it.")
    rank: int = Field(default=0, description="Pipeline rank of the runner, 0 for the API.")
    start_us: int = Field(description="Start, microseconds since the Unix epoch.")
    duration_us: int = Field(description="Duration in microseconds.")


class RankSpans(WireModel):
    """The spans of one rank that does not speak for its instance (ranks other than 0),
    sent to the node that took the request when the rank finishes its part."""

    command_id: CommandId = Field(description="Request the spans belong to.")
    owner_node: NodeId = Field(description="API node that holds the request's trace.")
    spans: list[Span] = Field(description="The rank's timed steps.")
