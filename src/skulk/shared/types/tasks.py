"""Tasks: what a runner is asked to do, created by the master from a command."""

from typing import Annotated, Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import (
    CommandId,
    ConversationId,
    InstanceId,
    ModelId,
    NodeId,
    TaskId,
)

Role = Literal["system", "user", "assistant", "tool"]
TaskStatus = Literal["pending", "running", "complete", "failed", "cancelled"]
TerminalTaskStatus = Literal["complete", "failed", "cancelled"]
TERMINAL_TASK_STATUSES: frozenset[TerminalTaskStatus] = frozenset(
    {"complete", "failed", "cancelled"}
)


class ChatMessage(WireModel):
    """One turn of a conversation, already reduced to plain text."""

    role: Role = Field(description="Who said it.")
    content: str = Field(description="What was said.")


DrafterChoice = Literal["ngram", "draft_model", "remote", "none"]
MAX_DRAFT_TOKENS = 16


class SpeculativeParams(WireModel):
    """Speculative decoding for one request; greedy output is the same with or without it."""

    drafter: DrafterChoice = Field(
        description="Who proposes tokens for the model to verify: `ngram` (prompt lookup, "
        "no weights), `draft_model` (a smaller model sharing the tokenizer), `remote` (a "
        "drafter on another node), or `none` to decode without drafting.")
    max_draft: int | None = Field(
        default=None, ge=1, le=MAX_DRAFT_TOKENS,
        description="Most tokens proposed per round (1-16); None: the node's default. The "
        "loop adapts the length below it to recent acceptance.")


# What a request may ask for: generous for any real use, small enough that every engine
# and encoder takes it (a value past these is a 400 at the API, not a crash further in).
MAX_GENERATED_TOKENS = 1 << 20
MAX_TOP_K = 1 << 20
MAX_SEED = (1 << 63) - 1
MAX_TOKEN_ID = (1 << 31) - 1
MAX_PROMPT_TOKENS = 1 << 20
MAX_STOP_SEQUENCES = 64
MAX_EMBED_TEXTS = 4096
MAX_KEEP_ALIVE_SECONDS = 365 * 24 * 3600.0
TokenId = Annotated[int, Field(ge=0, le=MAX_TOKEN_ID)]


class GenerationParams(WireModel):
    """Engine-neutral parameters of one text generation, parsed at the API edge."""

    model_id: ModelId = Field(description="Model asked for, canonical id.")
    messages: list[ChatMessage] = Field(description="The conversation so far.")
    max_tokens: int | None = Field(
        default=None, ge=0, le=MAX_GENERATED_TOKENS,
        description="Most tokens to generate; None means the default."
    )
    temperature: float = Field(default=1.0, ge=0.0, le=100.0, allow_inf_nan=False,
                               description="Sampling temperature; 0 is greedy.")
    top_p: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False,
                         description="Nucleus sampling mass.")
    top_k: int | None = Field(default=None, ge=0, le=MAX_TOP_K,
                              description="Keep the k likeliest tokens; None is "
                              "the engine's default.")
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED, description="Sampler seed.")
    stop: list[str] = Field(default_factory=list, max_length=MAX_STOP_SEQUENCES,
                            description="Stop sequences.")
    output: Literal["text", "json"] = Field(
        default="text", description="`json`: constrained decoding makes the output valid JSON.")
    json_schema: str | None = Field(
        default=None, description="With output `json`: the JSON Schema (as JSON text) the "
        "output must satisfy; None allows any JSON object.")
    prompt_token_ids: list[TokenId] | None = Field(
        default=None, max_length=MAX_PROMPT_TOKENS,
        description="Token ids to continue as is (a session of tokens); "
        "`messages` is then empty.")
    continuation: list[TokenId] = Field(
        default_factory=list, max_length=MAX_GENERATED_TOKENS,
        description="Tokens this request already generated (and the client already has), "
        "appended after the prompt: the runner goes on from there. Set when a request "
        "fails over to another instance mid-stream; `max_tokens` is then what is left.")
    session_id: ConversationId | None = Field(
        default=None, max_length=128,
        description="The conversation this turn belongs to: the runner keeps "
        "its KV cache between turns so only the new part is prefilled.")
    logprobs: int | None = Field(
        default=None, ge=0, le=20,
        description="Report each generated token's log probability and this "
        "many likeliest alternatives (0-20); None reports none.")
    embed: list[str] | None = Field(
        default=None, max_length=MAX_EMBED_TEXTS,
        description="Texts to embed instead of generating: the runner answers "
        "with one chunk carrying a unit-length vector per text.")
    trace: bool = Field(default=False, description="Time the runner's steps and send them "
                        "back with the final chunk.")
    raw_prompt: str | None = Field(
        default=None, description="Text to continue as is, without the chat template "
        "(legacy completions); `messages` is then empty.")
    keep_alive_seconds: float | None = Field(
        default=None, allow_inf_nan=False, ge=-1.0, le=MAX_KEEP_ALIVE_SECONDS,
        description="How long the instance stays placed after this request with nothing "
        "to do: 0 removes it once idle, -1 keeps it for ever; None: the cluster's default "
        "(`--keep-alive`). The master reads it; the runner does not.")
    speculative: SpeculativeParams | None = Field(
        default=None, description="Speculative decoding asked for or refused; None: the "
        "instance's default for its model.")


class TextGenerationTask(WireModel):
    """A generation assigned to an instance."""

    kind: Literal["text_generation"] = "text_generation"
    task_id: TaskId = Field(description="Id of this task.")
    command_id: CommandId = Field(description="Command that created it.")
    instance_id: InstanceId = Field(description="Instance that serves it.")
    owner_node: NodeId = Field(description="API node that streams its output.")
    params: GenerationParams = Field(description="What to generate.")
    status: TaskStatus = Field(default="pending", description="Where the task is.")
    error: str | None = Field(default=None, description="Why it failed, if it did.")


Task = TextGenerationTask
