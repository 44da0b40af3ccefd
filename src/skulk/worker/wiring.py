"""What a `Worker` is handed: its settings, the ends it sends on, and what this node
offers it beyond the State (its own memory now, weight sources, side-channel links).

The node builds these once; a test builds them with fakes. The worker never calls back
into the node.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from skulk.shared.channels import InstantSender, Sender
from skulk.shared.types.chunks import DataChunk
from skulk.shared.types.commands import Command
from skulk.shared.types.events import Event
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.shared.types.traces import RankSpans
from skulk.worker.device_links import DeviceLinks
from skulk.worker.engines.node_options import NodeEngineOptions
from skulk.worker.runner.deadlines import DEFAULT_DEADLINES, RunnerDeadlines
from skulk.worker.weights_fetch import SourcesFor


@dataclass(frozen=True)
class WorkerSettings:
    """The operator's choices for this node's runners (`skulk run`'s flags)."""

    # `--threads` for each runner (None: the engine decides).
    engine_threads: int | None = None
    # Whole instances batch concurrent requests (`--no-batching`: one at a time).
    batching: bool = True
    # A native relay reads each runner's output and writes the plain tokens of streams on
    # this node to their sockets itself (`--no-native-stream`: off).
    native_stream: bool = True
    # `--engine-option`s, by engine: over the card's, under the master's.
    node_engine_options: NodeEngineOptions = field(default_factory=dict)
    deadlines: RunnerDeadlines = DEFAULT_DEADLINES


@dataclass(frozen=True)
class WorkerOutbox:
    """Where the worker's output goes: local events to the master, chunks to the node
    that took the request, commands to the master, rank spans to the trace's owner."""

    events: Sender[Event]
    chunks: Sender[DataChunk]
    commands: Sender[Command]
    spans: Sender[RankSpans] | None = None
    # Chunks for streams on this node, handed over in the runner pipe's read callback.
    chunks_now: InstantSender[DataChunk] | None = None


class MemoryReader(Protocol):
    """This node's memory now, for the fit guard."""

    def read_memory(self) -> NodeTelemetry: ...


@dataclass(frozen=True)
class WorkerReach:
    """What this node offers its worker beyond the State. Each part is optional: without
    it, the worker does without (no fit guard, no fetch, no split-head ranks, no remote
    drafts)."""

    memory: MemoryReader | None = None
    # Where missing weights come from.
    weight_sources: SourcesFor | None = None
    # The ggml RPC links (runner options, revocations) of split instances whose head runs
    # the model.
    device_links: DeviceLinks | None = None
    # Engine options that let a runner reach a drafting node.
    remote_drafting: Callable[[NodeId], Awaitable[dict[str, str]]] | None = None
