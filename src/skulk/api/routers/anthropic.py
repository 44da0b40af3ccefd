"""`POST /v1/messages`: the Anthropic Messages dialect, streaming or not.

With tools, the reply is read whole before anything is sent (it may turn out to be a
call), then sent as a text block or as tool_use blocks; a stream then carries each block
whole."""

import json
from collections.abc import AsyncIterator
from typing import Any

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
from skulk.api.adapters.anthropic_tools import tool_use_blocks
from skulk.api.connection import Connection, connection_of
from skulk.api.consume import announce, client_gone, collect, event_stream, token_chunks
from skulk.api.context import ApiContext, Context
from skulk.api.direct_stream import direct_offer
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, open_generation
from skulk.api.serving import resolve_card
from skulk.api.text_event import TextEvent

router = APIRouter(tags=["anthropic"])


@router.post("/v1/messages", response_model=None,
             summary="Create a message (Anthropic dialect), streamed as events or whole")
async def create_message(body: MessagesRequest, request: Request,
                         context: Context) -> Response:
    params, plan = to_generation_params(body, resolve_card(context, body.model))
    generation = await open_generation(context, params, request)
    message_id = f"msg_{generation.command_id.removeprefix('cmd-')}"
    if body.stream and not plan.tools:
        return event_stream(generation, _stream(context, generation, message_id, body.model,
                                                connection_of(request.scope)))
    completion = await collect(context, generation, request)
    if completion is None:
        return client_gone().response("anthropic")
    uses = tool_use_blocks(plan.calls_in(completion.text), message_id)
    whole = message_body(message_id, body.model, completion.text, completion.finish_reason,
                         completion.stop_sequence, completion.usage, uses)
    if body.stream:
        return event_stream(generation, _replay(whole))
    return JSONResponse(whole, headers=announce(generation))


async def _replay(whole: dict[str, Any]) -> AsyncIterator[bytes]:
    """A reply read whole, as the event sequence of a stream: each block in one delta."""
    yield message_start(whole["id"], whole["model"], whole["usage"]["input_tokens"])
    for index, block in enumerate(whole["content"]):
        if block["type"] == "tool_use":
            yield event("content_block_start", {"index": index, "content_block": {
                **block, "input": {}}})
            yield event("content_block_delta", {"index": index, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        else:
            yield event("content_block_start", {"index": index,
                                                "content_block": {"type": "text", "text": ""}})
            yield event("content_block_delta", {"index": index, "delta": {
                "type": "text_delta", "text": block["text"]}})
        yield event("content_block_stop", {"index": index})
    yield event("message_delta", {"delta": {"stop_reason": whole["stop_reason"],
                                            "stop_sequence": whole["stop_sequence"]},
                                  "usage": whole["usage"]})
    yield event("message_stop", {})


async def _stream(context: ApiContext, generation: Generation, message_id: str,
                  model: str, connection: Connection | None) -> AsyncIterator[bytes]:
    yield message_start(message_id, model, input_tokens=0)
    yield event("content_block_start", {"index": 0,
                                        "content_block": {"type": "text", "text": ""}})
    yield event("ping", {})
    # Rendered once around the text; the runner's relay writes plain tokens as these too.
    delta = TextEvent(lambda text: event("content_block_delta", {
        "index": 0, "delta": {"type": "text_delta", "text": text}}))
    direct = direct_offer(context, connection, generation, delta)
    try:
        async for chunk in token_chunks(context, generation, direct):
            if chunk.text:
                yield delta(chunk.text)
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
