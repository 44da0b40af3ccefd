"""`POST /v1/completions`: legacy text completion (OpenAI dialect), streaming or not."""

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from skulk.api.adapters.openai_completions import (
    CompletionRequest,
    completion_body,
    prompt_of,
    to_generation_params,
)
from skulk.api.connection import Connection, connection_of
from skulk.api.consume import announce, client_gone, collect, event_stream, sse, token_chunks
from skulk.api.context import ApiContext, Context
from skulk.api.direct_stream import direct_offer
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, open_generation
from skulk.api.serving import resolve_card
from skulk.api.text_event import TextEvent

router = APIRouter(tags=["openai"])


@router.post("/v1/completions", response_model=None,
             summary="Continue a prompt without the chat template (legacy OpenAI dialect)")
async def completions(body: CompletionRequest, request: Request, context: Context) -> Response:
    params = to_generation_params(body, resolve_card(context, body.model))
    generation = await open_generation(context, params, request)
    completion_id = f"cmpl-{generation.command_id.removeprefix('cmd-')}"
    prefix = prompt_of(body) if body.echo else ""
    if body.stream:
        return event_stream(generation, _stream(context, generation, completion_id,
                                                body.model, prefix,
                                                connection_of(request.scope)))
    completion = await collect(context, generation, request)
    if completion is None:
        return client_gone().response()
    return JSONResponse(completion_body(completion_id, generation.created, body.model,
                                        prefix + completion.text, completion.finish_reason,
                                        completion.usage), headers=announce(generation))


async def _stream(context: ApiContext, generation: Generation, completion_id: str,
                  model: str, prefix: str,
                  connection: Connection | None) -> AsyncIterator[bytes]:
    created = generation.created
    if prefix:
        yield sse(completion_body(completion_id, created, model, prefix, None, None))
    # Plain tokens may go to the client from the runner's relay, as these same events.
    text = TextEvent(lambda text: sse(completion_body(completion_id, created, model, text,
                                                      None, None)))
    direct = direct_offer(context, connection, generation, text)
    try:
        async for chunk in token_chunks(context, generation, direct):
            if chunk.text or chunk.finish_reason is not None:
                yield sse(completion_body(completion_id, created, model, chunk.text,
                                          chunk.finish_reason, chunk.usage))
    except ApiError as error:
        yield sse(error.body())
        return
    yield b"data: [DONE]\n\n"
