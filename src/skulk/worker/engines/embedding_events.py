"""An embedding request answered in one step, the same way by every engine that embeds:
joined, one chunk with the vectors (or the error), done."""

from typing import Protocol

from skulk.shared.types.chunks import ErrorChunk, TokenChunk, Usage
from skulk.shared.types.ids import TaskId
from skulk.worker.engines.protocol import (
    EngineEvent,
    InvalidRequest,
    TaskDone,
    TaskJoined,
    TaskOutput,
)


class Embedder(Protocol):
    def embed(self, texts: list[str]) -> tuple[list[list[float]], int]: ...


def embedding_events(engine: Embedder, task_id: TaskId, texts: list[str]) -> list[EngineEvent]:
    try:
        vectors, tokens = engine.embed(texts)
    except InvalidRequest as invalid:
        return [TaskJoined(task_id),
                TaskOutput(task_id, ErrorChunk(error_kind="invalid_request",
                                               message=str(invalid))),
                TaskDone(task_id, "failed", str(invalid))]
    return [TaskJoined(task_id), TaskOutput(task_id, embedded(vectors, tokens)),
            TaskDone(task_id, "complete")]


def embedded(vectors: list[list[float]], tokens: int) -> TokenChunk:
    """The one chunk that answers an embedding request of `tokens` input tokens."""
    return TokenChunk(text="", embeddings=vectors, finish_reason="stop",
                      usage=Usage(prompt_tokens=tokens, completion_tokens=0))
