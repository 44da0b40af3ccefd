"""`/v1/sessions`: conversations kept on the server, each turn prefilling only what is new.

Create a session bound to a model, append messages (or token ids), generate (the reply is
appended), read its info, close it. Errors: 404 unknown, 410 closed or expired, 409 busy
(one generation at a time per session), 429 when the node holds too many.
"""

import json
from collections.abc import AsyncIterator
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from skulk.api.consume import announce, client_gone, collect, run_params, token_chunks
from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, resolve_card
from skulk.api.sessions import Session
from skulk.shared.types.chunks import FinishReason, Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import (
    MAX_GENERATED_TOKENS,
    MAX_PROMPT_TOKENS,
    MAX_SEED,
    MAX_TOKEN_ID,
    MAX_TOP_K,
    ChatMessage,
    GenerationParams,
    Role,
)

router = APIRouter(tags=["sessions"])

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


def _kv_bytes(card: ModelCard, tokens: int) -> int:
    head_dim = card.hidden_size // card.num_attention_heads
    per_token = 2 * card.n_layers * card.num_key_value_heads * head_dim * _KV_BYTES_PER_VALUE
    return per_token * tokens


def _info(context: ApiContext, session: Session) -> dict[str, object]:
    card = resolve_card(context, session.model_id)
    usage = session.last_usage
    return {"session_id": session.session_id, "model": session.model_id,
            "kind": session.kind, "turns": session.turns, "busy": session.busy,
            "history_length": session.history_length(),
            "context_tokens": session.context_tokens(),
            "cached_tokens_last_turn": usage.cached_tokens if usage else 0,
            "kv_bytes": _kv_bytes(card, session.context_tokens())}


@router.post("/v1/sessions", status_code=201, summary="Create a session bound to a model")
async def create_session(body: CreateSession, request: Request) -> dict[str, object]:
    context: ApiContext = request.app.state.context
    card = resolve_card(context, body.model)
    if body.system is not None and body.kind == "tokens":
        raise ApiError(400, "a token session takes no system prompt; append its tokens",
                       param="system")
    session = context.sessions.create(card.model_id, body.kind)
    if body.system:
        session.messages.append(ChatMessage(role="system", content=body.system))
    return _info(context, session)


@router.get("/v1/sessions/{session_id}", summary="A session's history length, cache and KV")
async def session_info(session_id: str, request: Request) -> dict[str, object]:
    context: ApiContext = request.app.state.context
    return _info(context, context.sessions.get(session_id))


@router.delete("/v1/sessions/{session_id}", summary="Close a session")
async def close_session(session_id: str, request: Request) -> dict[str, object]:
    context: ApiContext = request.app.state.context
    session = context.sessions.close(session_id)
    return {"closed": session.session_id, "turns": session.turns}


@router.post("/v1/sessions/{session_id}/messages",
             summary="Append messages (chat session) or token ids (token session)")
async def append(session_id: str, body: Append, request: Request) -> dict[str, object]:
    context: ApiContext = request.app.state.context
    session = context.sessions.get(session_id)
    if session.busy:
        raise ApiError(409, f"session '{session_id}' is generating; wait for it to finish",
                       code="session_busy")
    if session.kind == "chat":
        if body.tokens:
            raise ApiError(400, "this is a chat session: append messages", param="tokens")
        session.messages += [ChatMessage(role=m.role, content=m.content)
                             for m in body.messages]
    else:
        if body.messages:
            raise ApiError(400, "this is a token session: append tokens", param="messages")
        if any(token < 0 for token in body.tokens):
            raise ApiError(400, "token ids are never negative", param="tokens")
        if any(token > MAX_TOKEN_ID for token in body.tokens):
            raise ApiError(400, f"token ids are at most {MAX_TOKEN_ID}", param="tokens")
        session.tokens += body.tokens
    return _info(context, session)


@router.post("/v1/sessions/{session_id}/generate", response_model=None,
             summary="Generate the next turn; the reply is appended to the session")
async def generate(session_id: str, body: Generate, request: Request) -> Response:
    context: ApiContext = request.app.state.context
    session = context.sessions.get(session_id)
    if session.busy:
        raise ApiError(409, f"session '{session_id}' is already generating; one turn at a "
                       "time", code="session_busy")
    if session.history_length() == 0:
        raise ApiError(400, "the session is empty: append something first")
    params = GenerationParams(
        model_id=session.model_id, session_id=session.session_id,
        messages=list(session.messages) if session.kind == "chat" else [],
        prompt_token_ids=list(session.tokens) if session.kind == "tokens" else None,
        max_tokens=body.max_tokens, temperature=body.temperature, top_p=body.top_p,
        top_k=body.top_k, seed=body.seed, stop=[s for s in body.stop if s])
    session.busy = True
    try:
        generation = await run_params(context, params)
    except BaseException:
        session.busy = False
        raise
    if body.stream:
        return StreamingResponse(_stream(context, session, generation),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", **announce(generation)})
    try:
        ids: list[int] = []
        completion = await collect(context, generation, request, token_ids=ids)
    finally:
        session.busy = False
    if completion is None:
        return client_gone().response()
    _record_turn(session, completion.text, ids, completion.usage)
    return JSONResponse(_turn_body(session, completion.text, ids, completion.finish_reason,
                                   completion.usage), headers=announce(generation))


def _record_turn(session: Session, text: str, ids: list[int], usage: Usage | None) -> None:
    if session.kind == "chat":
        session.messages.append(ChatMessage(role="assistant", content=text))
    else:
        session.tokens += ids
    session.turns += 1
    session.last_usage = usage


def _turn_body(session: Session, text: str, ids: list[int], finish: FinishReason | None,
               usage: Usage | None) -> dict[str, object]:
    return {"session_id": session.session_id, "text": text, "token_ids": ids,
            "finish_reason": finish, "usage": None if usage is None else usage.model_dump()}


async def _stream(context: ApiContext, session: Session,
                  generation: Generation) -> AsyncIterator[bytes]:
    parts: list[str] = []
    ids: list[int] = []
    try:
        async for chunk in token_chunks(context, generation):
            parts.append(chunk.text)
            ids += chunk.token_ids
            if chunk.finish_reason is None:
                yield _sse({"text": chunk.text, "token_ids": chunk.token_ids})
                continue
            _record_turn(session, "".join(parts), ids, chunk.usage)
            yield _sse({"text": chunk.text, "token_ids": chunk.token_ids,
                        **_turn_body(session, "".join(parts), ids, chunk.finish_reason,
                                     chunk.usage), "done": True})
    except ApiError as error:
        yield _sse(error.body())
    finally:
        session.busy = False


def _sse(body: object) -> bytes:
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()
