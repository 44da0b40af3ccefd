"""`POST /v1/responses`: the OpenAI Responses dialect, whole or as typed events."""

import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from skulk.api.adapters.openai_responses import (
    ResponsesRequest,
    message_item,
    response_body,
    to_generation_params,
)
from skulk.api.consume import announce, client_gone, collect, event_stream, token_chunks
from skulk.api.context import ApiContext, Context
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, open_generation
from skulk.api.serving import resolve_card

router = APIRouter(tags=["openai"])


@router.post("/v1/responses", response_model=None,
             summary="Create a response (OpenAI Responses dialect), whole or as events")
async def create_response(body: ResponsesRequest, request: Request,
                          context: Context) -> Response:
    params = to_generation_params(body, resolve_card(context, body.model))
    generation = await open_generation(context, params, request)
    suffix = generation.command_id.removeprefix("cmd-")
    response_id, item_id = f"resp_{suffix}", f"msg_{suffix}"
    if body.stream:
        return event_stream(generation,
                            _events(context, generation, body, response_id, item_id))
    completion = await collect(context, generation, request)
    if completion is None:
        return client_gone().response()
    return JSONResponse(response_body(response_id, generation.created, body, item_id,
                                      completion.text, completion.finish_reason,
                                      completion.usage), headers=announce(generation))


async def _events(context: ApiContext, generation: Generation, body: ResponsesRequest,
                  response_id: str, item_id: str) -> AsyncIterator[bytes]:
    sequence = 0

    def event(kind: str, fields: dict[str, object]) -> bytes:
        nonlocal sequence
        payload = {"type": kind, "sequence_number": sequence, **fields}
        sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode()

    created = generation.created
    started = response_body(response_id, created, body, item_id, None, None, None)
    yield event("response.created", {"response": started})
    yield event("response.in_progress", {"response": started})
    yield event("response.output_item.added",
                {"output_index": 0, "item": message_item(item_id, "", False)})
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    yield event("response.content_part.added",
                {**where, "part": {"type": "output_text", "text": "", "annotations": []}})
    parts: list[str] = []
    try:
        async for chunk in token_chunks(context, generation):
            if chunk.text:
                parts.append(chunk.text)
                yield event("response.output_text.delta",
                            {**where, "delta": chunk.text, "logprobs": []})
            if chunk.finish_reason is None:
                continue
            text = "".join(parts)
            yield event("response.output_text.done", {**where, "text": text, "logprobs": []})
            yield event("response.content_part.done", {**where, "part": {
                "type": "output_text", "text": text, "annotations": []}})
            yield event("response.output_item.done",
                        {"output_index": 0, "item": message_item(item_id, text, True)})
            final = response_body(response_id, created, body, item_id, text,
                                  chunk.finish_reason, chunk.usage)
            kind = "response.incomplete" if final["status"] == "incomplete" else (
                "response.completed")
            yield event(kind, {"response": final})
    except ApiError as error:
        yield event("error", {"code": error.code, "message": error.message,
                              "param": error.param})
