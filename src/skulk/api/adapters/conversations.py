"""Skulk's own sessions dialect (`/v1/sessions`): strict wire types in, a turn's
`GenerationParams` from the session's history, and the bodies it answers with."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skulk.api.conversations import Conversation
from skulk.shared.types.chunks import FinishReason, Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import (
    MAX_GENERATED_TOKENS,
    MAX_PROMPT_TOKENS,
    MAX_SEED,
    MAX_TOKEN_ID,
    MAX_TOP_K,
    GenerationParams,
    Role,
)

# KV cache bytes per token per layer: keys and values, f16 (llama.cpp's default type).
_KV_BYTES_PER_VALUE = 2


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateSession(_Strict):
    model: str = Field(description="A model id or alias.", examples=["smollm2-135m"])
    kind: Literal["chat", "tokens"] = Field(
        default="chat", description="`chat` holds messages; `tokens` holds raw token ids.")
    system: str | None = Field(default=None, description="System prompt (chat sessions).")


class SessionMessage(_Strict):
    role: Role = Field(description="Who said it.")
    content: str = Field(description="What was said.")


class Append(_Strict):
    messages: list[SessionMessage] = Field(default_factory=list,
                                           description="Turns to append (chat sessions).")
    tokens: list[int] = Field(default_factory=list, max_length=MAX_PROMPT_TOKENS,
                              description="Token ids to append (token sessions), each "
                              f"0..{MAX_TOKEN_ID}.")


class Generate(_Strict):
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_GENERATED_TOKENS,
                                   description="Most tokens.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="0 is greedy.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus mass.")
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K,
                              description="Keep the k likeliest.")
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED, description="Sampler seed.")
    stop: list[str] = Field(default_factory=list, max_length=4, description="Stops.")
    stream: bool = Field(default=False, description="Stream server-sent events.")


def to_generation_params(session: Conversation, request: Generate) -> GenerationParams:
    """The next turn: the session's whole history, sent with its id."""
    return GenerationParams(
        model_id=session.model_id, session_id=session.session_id,
        messages=list(session.messages) if session.kind == "chat" else [],
        prompt_token_ids=list(session.tokens) if session.kind == "tokens" else None,
        max_tokens=request.max_tokens, temperature=request.temperature, top_p=request.top_p,
        top_k=request.top_k, seed=request.seed, stop=[s for s in request.stop if s])


def _kv_bytes(card: ModelCard, tokens: int) -> int:
    head_dim = card.attention_head_dim
    per_token = 2 * card.n_layers * card.num_key_value_heads * head_dim * _KV_BYTES_PER_VALUE
    return per_token * tokens


def session_body(session: Conversation, card: ModelCard) -> dict[str, object]:
    """A session's info: its history, what the runner holds for it and that cache's size."""
    usage = session.last_usage
    return {"session_id": session.session_id, "model": session.model_id,
            "kind": session.kind, "turns": session.turns, "busy": session.busy,
            "history_length": session.history_length(),
            "context_tokens": session.context_tokens(),
            "cached_tokens_last_turn": usage.cached_tokens if usage else 0,
            "kv_bytes": _kv_bytes(card, session.context_tokens())}


def turn_body(session: Conversation, text: str, ids: list[int], finish: FinishReason | None,
              usage: Usage | None) -> dict[str, object]:
    return {"session_id": session.session_id, "text": text, "token_ids": ids,
            "finish_reason": finish, "usage": None if usage is None else usage.model_dump()}
