"""Telemetry: node readings gossiped last-writer-wins, never event-sourced."""

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import NodeId


class NodeTelemetry(WireModel):
    """One node's readings at one moment."""

    node_id: NodeId = Field(description="Node the readings are from.")
    stamp: float = Field(description="Unix time the readings were taken.")
    memory_total_bytes: int = Field(description="Physical memory.")
    memory_available_bytes: int = Field(description="Memory available to new work.")
    cpu_count: int = Field(description="Logical CPUs.")
    backends: list[str] = Field(description="Engine tags, e.g. `llama_cpp-cpu`.")
    has_worker: bool = Field(description="Whether the node runs models.")
    api_url: str | None = Field(default=None, description="The node's HTTP API, if it serves one.")
