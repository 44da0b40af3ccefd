"""What every engine offers the runner: load, warm up, then take requests and step them."""

from dataclasses import dataclass, field
from typing import Protocol

from skulk.shared.types.chunks import ErrorChunk, TokenChunk
from skulk.shared.types.ids import TaskId
from skulk.shared.types.tasks import GenerationParams, TerminalTaskStatus
from skulk.shared.types.traces import Span
from skulk.worker.engines.options import EngineOptions


@dataclass(frozen=True)
class EngineConfig:
    """How to load one shard; the same on every rank except rank and layer range."""

    model_path: str
    context_token_limit: int
    n_threads: int | None = None
    start_layer: int = 0
    end_layer: int = 0
    world_size: int = 1
    rank: int = 0
    options: EngineOptions = field(default_factory=EngineOptions)
    """The engine's options model, parsed by the worker (the engine reads it with `of`)."""


class ContextOverflow(Exception):
    """The prompt does not fit the instance's context."""

    def __init__(self, prompt_tokens: int, limit: int) -> None:
        super().__init__(
            f"the prompt is {prompt_tokens} tokens but this model instance admits at most "
            f"{limit} tokens of prompt plus output; shorten the conversation or lower "
            "max_tokens")
        self.prompt_tokens = prompt_tokens
        self.limit = limit


class InvalidRequest(Exception):
    """The parameters cannot be honoured; the message says what to change."""


class PipelineCorrupt(RuntimeError):
    """A split instance's activations or logits held NaN/Inf: every rank raises it from
    the same step, the batch fails with `pipeline_corrupt` and the runner exits."""


@dataclass(frozen=True)
class TaskJoined:
    """The request entered the running batch (it is now being prefilled or decoded)."""

    task_id: TaskId


@dataclass(frozen=True)
class TaskOutput:
    """A chunk for the user; only rank 0 produces these."""

    task_id: TaskId
    chunk: TokenChunk | ErrorChunk


@dataclass(frozen=True)
class TaskDone:
    """The request left the engine; reported exactly once per submitted task."""

    task_id: TaskId
    status: TerminalTaskStatus
    error: str | None = None
    # What the engine timed for this request (pipeline hops, ...); the supervisor fills in
    # node and rank, which the engine does not know.
    spans: tuple[Span, ...] = ()


EngineEvent = TaskJoined | TaskOutput | TaskDone


class Engine(Protocol):
    """What every engine offers its runner: it loads, warms up, and runs many requests at
    once. The runner hands requests over as they come and steps the engine while it has
    work, forwarding what each step produced. An engine that serves one request at a time
    is a batch of one; one request on its own (a warm-up) runs over `step` too, through
    `RequestAlone`."""

    def load(self) -> None: ...

    def warm_up(self) -> None: ...

    def submit(self, task_id: TaskId, params: GenerationParams) -> None:
        """Queue a request; never raises for a bad request (it ends with an error chunk
        and a failed `TaskDone` from a later step)."""
        ...

    def cancel(self, task_id: TaskId) -> None:
        """Stop a request between steps; unknown or finished ids are ignored."""
        ...

    @property
    def has_work(self) -> bool:
        """Whether `step` would do anything: requests queued, prefilling or decoding."""
        ...

    @property
    def idle_step_seconds(self) -> float | None:
        """Step this often even without work (None: never). A model split over several
        processes needs it: its ranks agree on requests inside `step`, so every rank must
        keep stepping for one that holds a request the others never got to time it out."""
        ...

    def step(self) -> list[EngineEvent]:
        """Advance every request by at most one token (and prefill a bounded slice)."""
        ...
