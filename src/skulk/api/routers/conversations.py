"""`/v1/sessions`: conversations kept on the server, each turn prefilling only what is new.

Create a session bound to a model, append messages (or token ids), generate (the reply is
appended), read its info, close it. Errors: 404 unknown, 410 closed or expired, 409 busy
(one generation at a time per session), 429 when the node holds too many.
"""

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from skulk.api.adapters.conversations import (
    Append,
    CreateSession,
    Generate,
    session_body,
    to_generation_params,
    turn_body,
)
from skulk.api.consume import announce, client_gone, collect, event_stream, sse, token_chunks
from skulk.api.context import ApiContext, Context
from skulk.api.conversations import Conversation
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, open_generation
from skulk.api.serving import resolve_card
from skulk.shared.types.ids import ConversationId
from skulk.shared.types.tasks import MAX_TOKEN_ID, ChatMessage

router = APIRouter(tags=["sessions"])


def _info(context: ApiContext, session: Conversation) -> dict[str, object]:
    return session_body(session, resolve_card(context, session.model_id))


@router.post("/v1/sessions", status_code=201, summary="Create a session bound to a model")
async def create_session(body: CreateSession, context: Context) -> dict[str, object]:
    card = resolve_card(context, body.model)
    if body.system is not None and body.kind == "tokens":
        raise ApiError(400, "a token session takes no system prompt; append its tokens",
                       param="system")
    session = context.requests.conversations.create(card.model_id, body.kind)
    if body.system:
        session.messages.append(ChatMessage(role="system", content=body.system))
    return _info(context, session)


@router.get("/v1/sessions/{session_id}", summary="A session's history length, cache and KV")
async def session_info(session_id: ConversationId, context: Context) -> dict[str, object]:
    return _info(context, context.requests.conversations.get(session_id))


@router.delete("/v1/sessions/{session_id}", summary="Close a session")
async def close_session(session_id: ConversationId, context: Context) -> dict[str, object]:
    session = context.requests.conversations.close(session_id)
    return {"closed": session.session_id, "turns": session.turns}


@router.post("/v1/sessions/{session_id}/messages",
             summary="Append messages (chat session) or token ids (token session)")
async def append(session_id: ConversationId, body: Append,
                 context: Context) -> dict[str, object]:
    session = context.requests.conversations.get(session_id)
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
async def generate(session_id: ConversationId, body: Generate, request: Request,
                   context: Context) -> Response:
    session = context.requests.conversations.get(session_id)
    if session.busy:
        raise ApiError(409, f"session '{session_id}' is already generating; one turn at a "
                       "time", code="session_busy")
    if session.history_length() == 0:
        raise ApiError(400, "the session is empty: append something first")
    params = to_generation_params(session, body)
    session.busy = True
    try:
        generation = await open_generation(context, params, request)
    except BaseException:
        session.busy = False
        raise
    if body.stream:
        return event_stream(generation, _stream(context, session, generation))
    try:
        ids: list[int] = []
        completion = await collect(context, generation, request, token_ids=ids)
    finally:
        session.busy = False
    if completion is None:
        return client_gone().response()
    session.record_turn(completion.text, ids, completion.usage)
    return JSONResponse(turn_body(session, completion.text, ids, completion.finish_reason,
                                  completion.usage), headers=announce(generation))


async def _stream(context: ApiContext, session: Conversation,
                  generation: Generation) -> AsyncIterator[bytes]:
    parts: list[str] = []
    ids: list[int] = []
    try:
        async for chunk in token_chunks(context, generation):
            parts.append(chunk.text)
            ids += chunk.token_ids
            if chunk.finish_reason is None:
                yield sse({"text": chunk.text, "token_ids": chunk.token_ids})
                continue
            session.record_turn("".join(parts), ids, chunk.usage)
            yield sse({"text": chunk.text, "token_ids": chunk.token_ids,
                       **turn_body(session, "".join(parts), ids, chunk.finish_reason,
                                   chunk.usage), "done": True})
    except ApiError as error:
        yield sse(error.body())
    finally:
        session.busy = False
