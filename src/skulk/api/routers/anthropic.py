"""`POST /v1/messages`: the Anthropic Messages dialect, streaming or not."""

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from skulk.api.adapters.anthropic_messages import (
    MessagesRequest,
    event,
    message_body,
    message_start,
    stop_reason,
    to_generation_params,
    usage_body,
)
from skulk.api.consume import announce, client_gone, collect, event_stream, token_chunks
from skulk.api.context import ApiContext, Context
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, open_generation
from skulk.api.serving import resolve_card

router = APIRouter(tags=["anthropic"])


@router.post("/v1/messages", response_model=None,
             summary="Create a message (Anthropic dialect), streamed as events or whole")
async def create_message(body: MessagesRequest, request: Request,
                         context: Context) -> Response:
    params = to_generation_params(body, resolve_card(context, body.model))
    generation = await open_generation(context, params, request)
    message_id = f"msg_{generation.command_id.removeprefix('cmd-')}"
    if body.stream:
        return event_stream(generation, _stream(context, generation, message_id, body.model))
    completion = await collect(context, generation, request)
    if completion is None:
        return client_gone().response("anthropic")
    return JSONResponse(message_body(message_id, body.model, completion.text,
                                     completion.finish_reason, completion.stop_sequence,
                                     completion.usage), headers=announce(generation))


async def _stream(context: ApiContext, generation: Generation, message_id: str,
                  model: str) -> AsyncIterator[bytes]:
    yield message_start(message_id, model, input_tokens=0)
    yield event("content_block_start", {"index": 0,
                                        "content_block": {"type": "text", "text": ""}})
    yield event("ping", {})
    try:
        async for chunk in token_chunks(context, generation):
            if chunk.text:
                yield event("content_block_delta", {
                    "index": 0, "delta": {"type": "text_delta", "text": chunk.text}})
            if chunk.finish_reason is not None:
                yield event("content_block_stop", {"index": 0})
                yield event("message_delta", {
                    "delta": {"stop_reason": stop_reason(chunk.finish_reason,
                                                         chunk.stop_sequence),
                              "stop_sequence": chunk.stop_sequence},
                    "usage": usage_body(chunk.usage)})
                yield event("message_stop", {})
    except ApiError as error:
        yield event("error", {"error": error.body("anthropic")["error"]})
