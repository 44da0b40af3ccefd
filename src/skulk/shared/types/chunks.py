"""Output chunks: what a runner produces per step, carried on the data plane."""

from typing import Annotated, Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import CommandId, NodeId

FinishReason = Literal["stop", "length"]
ErrorKind = Literal[
    "context_length_exceeded",
    "invalid_request",
    "model_not_found",
    "placement_failed",
    "runner_failed",
    "timeout",
    "cancelled",
    "internal",
]


class Usage(WireModel):
    """Token counts of one generation."""

    prompt_tokens: int = Field(description="Tokens in the rendered prompt.")
    completion_tokens: int = Field(description="Tokens generated.")


class TokenChunk(WireModel):
    """A piece of generated text; the last one carries the finish reason and usage."""

    kind: Literal["token"] = "token"
    text: str = Field(description="Decoded text of this step (may be empty).")
    token_id: int | None = Field(default=None, description="Token id, when known.")
    finish_reason: FinishReason | None = Field(
        default=None, description="Set on the final chunk only."
    )
    usage: Usage | None = Field(default=None, description="Set on the final chunk only.")


class ErrorChunk(WireModel):
    """A terminal error for one request."""

    kind: Literal["error"] = "error"
    error_kind: ErrorKind = Field(description="Class of the error.")
    message: str = Field(description="What went wrong and what to do about it.")


Chunk = Annotated[TokenChunk | ErrorChunk, Field(discriminator="kind")]


def is_terminal(chunk: TokenChunk | ErrorChunk) -> bool:
    return isinstance(chunk, ErrorChunk) or chunk.finish_reason is not None


class DataChunk(WireModel):
    """A chunk on the data plane, addressed to the node that owns the request."""

    command_id: CommandId = Field(description="Request this chunk belongs to.")
    owner_node: NodeId = Field(description="API node the chunk is addressed to.")
    sequence: int = Field(description="Per-command sequence number, from 0.")
    chunk: Chunk = Field(description="The output itself.")
