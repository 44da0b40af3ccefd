"""`POST /v1/chat/completions`: the OpenAI chat dialect, streaming or not.

With tools, the reply is read whole before anything is sent (it may turn out to be a
call), then sent as content or as tool calls; a stream then carries it in one delta.
"""

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from skulk.api.adapters.openai_chat import (
    ChatCompletionRequest,
    chunk_body,
    completion_body,
    plan_chat,
    tool_calls_body,
    usage_chunk_body,
)
from skulk.api.connection import Connection, connection_of
from skulk.api.consume import (
    Completion,
    announce,
    client_gone,
    collect,
    event_stream,
    sse,
    token_chunks,
)
from skulk.api.context import ApiContext, Context
from skulk.api.direct_stream import direct_offer
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, open_generation
from skulk.api.serving import resolve_card
from skulk.api.text_event import TextEvent

router = APIRouter(tags=["openai"])


@router.post("/v1/chat/completions", response_model=None,
             summary="Chat completion (OpenAI dialect), streamed as server-sent events or whole")
async def chat_completions(body: ChatCompletionRequest, request: Request,
                           context: Context) -> Response:
    plan = plan_chat(body, resolve_card(context, body.model))
    generation = await open_generation(context, plan.params, request)
    completion_id = f"chatcmpl-{generation.command_id.removeprefix('cmd-')}"
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    with_logprobs = plan.params.logprobs is not None
    if body.stream and not plan.tools:
        return event_stream(generation, _stream(context, generation, completion_id,
                                                body.model, include_usage, with_logprobs,
                                                connection_of(request.scope)))
    completion = await collect(context, generation, request)
    if completion is None:
        return client_gone().response()
    calls = tool_calls_body(plan.tool_calls_in(completion.text), completion_id[-12:])
    if body.stream:
        return event_stream(generation, _replay(completion, calls, completion_id,
                                                generation.created, body.model, include_usage))
    return JSONResponse(completion_body(
        completion_id, generation.created, body.model, completion.text,
        completion.finish_reason, completion.usage, calls,
        completion.logprobs if with_logprobs else None), headers=announce(generation))


async def _stream(context: ApiContext, generation: Generation, completion_id: str,
                  model: str, include_usage: bool, with_logprobs: bool,
                  connection: Connection | None) -> AsyncIterator[bytes]:
    created = generation.created
    yield sse(chunk_body(completion_id, created, model, {"role": "assistant", "content": ""}))
    content = TextEvent(lambda text: sse(chunk_body(completion_id, created, model,
                                                    {"content": text})))
    # Plain tokens may go to the client from the runner's relay, as these same events.
    direct = None if with_logprobs else direct_offer(context, connection, generation, content)
    try:
        async for chunk in token_chunks(context, generation, direct):
            if chunk.text and not with_logprobs:
                yield content(chunk.text)  # once per token: rendered around the text
            elif chunk.text:
                yield sse(chunk_body(completion_id, created, model, {"content": chunk.text},
                                     logprobs=chunk.logprobs))
            if chunk.finish_reason is not None:
                yield sse(chunk_body(completion_id, created, model, {}, chunk.finish_reason))
                if include_usage:
                    yield sse(usage_chunk_body(completion_id, created, model, chunk.usage))
    except ApiError as error:
        yield sse(error.body())
        return
    yield b"data: [DONE]\n\n"


async def _replay(completion: Completion, calls: list[dict[str, object]], completion_id: str,
                  created: int, model: str, include_usage: bool) -> AsyncIterator[bytes]:
    """A reply read whole, as a stream: one delta with the content or the calls."""
    if calls:
        delta: dict[str, object] = {"role": "assistant", "content": None, "tool_calls": [
            {"index": index, **call} for index, call in enumerate(calls)]}
    else:
        delta = {"role": "assistant", "content": completion.text}
    yield sse(chunk_body(completion_id, created, model, delta))
    finish = "tool_calls" if calls else completion.finish_reason
    yield sse(chunk_body(completion_id, created, model, {}, finish))
    if include_usage:
        yield sse(usage_chunk_body(completion_id, created, model, completion.usage))
    yield b"data: [DONE]\n\n"
