"""What every engine offers the runner: load, warm up, and generate a stream of chunks."""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.tasks import GenerationParams


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
    options: dict[str, str] = field(default_factory=dict)


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


class Engine(Protocol):
    def load(self) -> None: ...

    def warm_up(self) -> None: ...

    def generate(self, params: GenerationParams) -> Iterator[TokenChunk]:
        """One chunk per step; the last carries `finish_reason` and `usage`.

        Raises `ContextOverflow` or `InvalidRequest` before yielding anything. Closing the
        iterator stops generation (that is how cancellation between tokens works).
        """
        ...
