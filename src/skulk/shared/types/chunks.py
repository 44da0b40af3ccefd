"""Output chunks: what a runner produces per step, carried on the data plane."""

from typing import Annotated, Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import CommandId, NodeId
from skulk.shared.types.traces import Span

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
    "partitioned",
    "pipeline_corrupt",
    "overloaded",
]


class Usage(WireModel):
    """Token counts of one generation."""

    prompt_tokens: int = Field(description="Tokens in the rendered prompt.")
    completion_tokens: int = Field(description="Tokens generated.")
    cached_tokens: int = Field(default=0, description="Prompt tokens whose KV was reused "
                               "from an earlier turn instead of prefilled again.")
    drafter: str | None = Field(default=None, description="The drafter that proposed tokens "
                                "for this generation, if speculative decoding ran.")
    drafted_tokens: int = Field(default=0, description="Tokens the drafter proposed.")
    accepted_tokens: int = Field(default=0, description="Proposed tokens the model kept "
                                 "(each one a forward pass saved).")


class TopLogprob(WireModel):
    """One candidate token and its log probability."""

    token: str = Field(description="The token's text.")
    bytes: list[int] = Field(description="The token's UTF-8 bytes (a token may split a "
                             "character).")
    logprob: float = Field(description="Natural-log probability under the model.")


class TokenLogprob(TopLogprob):
    """A generated token's log probability and the likeliest alternatives."""

    top: list[TopLogprob] = Field(default_factory=list, description="Likeliest candidates.")


class TokenChunk(WireModel):
    """A piece of generated text; the last one carries the finish reason and usage."""

    kind: Literal["token"] = "token"
    text: str = Field(description="Decoded text of this step (may be empty).")
    token_ids: list[int] = Field(default_factory=list, description="The generated tokens "
                                 "this text came from, including any held back before it.")
    finish_reason: FinishReason | None = Field(
        default=None, description="Set on the final chunk only."
    )
    usage: Usage | None = Field(default=None, description="Set on the final chunk only.")
    stop_sequence: str | None = Field(
        default=None, description="The stop sequence that ended generation, if one did.")
    logprobs: list[TokenLogprob] = Field(
        default_factory=list, description="When asked for: one entry per token in token_ids.")
    embeddings: list[list[float]] | None = Field(
        default=None, description="The answer to an embedding request: one vector per text.")
    spans: list[Span] = Field(default_factory=list, description="Final chunk of a traced "
                              "request: the runner's timed steps.")


class ErrorChunk(WireModel):
    """A terminal error for one request."""

    kind: Literal["error"] = "error"
    error_kind: ErrorKind = Field(description="Class of the error.")
    message: str = Field(description="What went wrong and what to do about it.")
    retry_after_seconds: int | None = Field(
        default=None, description="With `overloaded`: when a retry may find room.")


Chunk = Annotated[TokenChunk | ErrorChunk, Field(discriminator="kind")]


def is_terminal(chunk: TokenChunk | ErrorChunk) -> bool:
    return isinstance(chunk, ErrorChunk) or chunk.finish_reason is not None


class DataChunk(WireModel):
    """A chunk on the data plane, addressed to the node that owns the request."""

    command_id: CommandId = Field(description="Request this chunk belongs to.")
    owner_node: NodeId = Field(description="API node the chunk is addressed to.")
    sequence: int = Field(description="Per-command sequence number, from 0.")
    chunk: Chunk = Field(description="The output itself.")
