"""`POST /v1/chat/completions`: the OpenAI chat dialect, streaming or not."""

import json
from collections.abc import AsyncIterator

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from skulk.api.adapters.openai_chat import (
    ChatCompletionRequest,
    chunk_body,
    completion_body,
    to_generation_params,
    usage_chunk_body,
)
from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.generation import (
    Generation,
    ensure_serving,
    finish_generation,
    resolve_card,
    start_generation,
)
from skulk.shared.types.chunks import ErrorChunk, FinishReason, Usage

router = APIRouter(tags=["openai"])

DISCONNECT_POLL_SECONDS = 0.5


def _sse(body: object) -> bytes:
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
    context: ApiContext = request.app.state.context
    card = resolve_card(context, body.model)
    params = to_generation_params(body, card)
    await ensure_serving(context, card.model_id)
    generation = await start_generation(context, params)
    completion_id = f"chatcmpl-{generation.command_id.removeprefix('cmd-')}"
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return StreamingResponse(
            _stream(context, generation, completion_id, body.model, include_usage),
            media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    return await _complete(context, generation, completion_id, body.model, request)


async def _complete(context: ApiContext, generation: Generation, completion_id: str,
                    model: str, request: Request) -> JSONResponse:
    parts: list[str] = []
    finish: FinishReason | None = None
    usage: Usage | None = None
    try:
        async with anyio.create_task_group() as tasks:
            async def cancel_on_disconnect() -> None:
                while not await request.is_disconnected():
                    await anyio.sleep(DISCONNECT_POLL_SECONDS)
                tasks.cancel_scope.cancel()

            tasks.start_soon(cancel_on_disconnect)
            async for chunk in generation.chunks():
                if isinstance(chunk, ErrorChunk):
                    raise ApiError.from_chunk(chunk)
                parts.append(chunk.text)
                finish, usage = chunk.finish_reason, chunk.usage or usage
            generation.done = True
            tasks.cancel_scope.cancel()
    finally:
        await finish_generation(context, generation)
    if not generation.done:
        return ApiError(499, "the client went away", code="client_disconnected").response()
    return JSONResponse(completion_body(completion_id, generation.created, model,
                                        "".join(parts), finish, usage))


async def _stream(context: ApiContext, generation: Generation, completion_id: str,
                  model: str, include_usage: bool) -> AsyncIterator[bytes]:
    created = generation.created
    try:
        yield _sse(chunk_body(completion_id, created, model, {"role": "assistant",
                                                               "content": ""}))
        async for chunk in generation.chunks():
            if isinstance(chunk, ErrorChunk):
                yield _sse(ApiError.from_chunk(chunk).body())
                break
            if chunk.text:
                yield _sse(chunk_body(completion_id, created, model, {"content": chunk.text}))
            if chunk.finish_reason is not None:
                generation.done = True
                yield _sse(chunk_body(completion_id, created, model, {}, chunk.finish_reason))
                if include_usage:
                    yield _sse(usage_chunk_body(completion_id, created, model, chunk.usage))
        yield b"data: [DONE]\n\n"
    finally:
        await finish_generation(context, generation)
