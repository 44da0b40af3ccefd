"""The Ollama dialect, under `/api/...` and again under `/ollama/api/...`."""

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from skulk import __version__
from skulk.api.adapters.ollama import (
    OLLAMA_VERSION,
    ChatRequest,
    GenerateRequest,
    ShowRequest,
    Timing,
    chat_params,
    generate_params,
    model_details,
    model_name,
    now_iso,
    tag_body,
)
from skulk.api.consume import announce, client_gone, collect, event_stream, token_chunks
from skulk.api.context import ApiContext, Context
from skulk.api.errors import ApiError
from skulk.api.generation import Generation, open_generation
from skulk.api.model_availability import listed_models
from skulk.api.serving import ensure_serving, resolve_card

router = APIRouter(tags=["ollama"])


def _ndjson(body: object) -> bytes:
    return (json.dumps(body, separators=(",", ":")) + "\n").encode()


async def _answer(context: ApiContext, request: Request, model: str, generation: Generation,
                  timing: Timing, stream: bool,
                  piece: Callable[[str], dict[str, object]]) -> Response:
    """Answer in Ollama's shape: `piece(text)` gives the per-chunk body fields."""
    head: dict[str, object] = {"model": model}
    if stream:
        return event_stream(generation, _stream(context, generation, timing, head, piece),
                            media_type="application/x-ndjson")
    completion = await collect(context, generation, request)
    if completion is None:
        return client_gone().response("ollama")
    return JSONResponse({**head, "created_at": now_iso(), **piece(completion.text),
                         **timing.final_fields(completion.usage, completion.finish_reason)},
                        headers=announce(generation))


async def _stream(context: ApiContext, generation: Generation, timing: Timing,
                  head: dict[str, object], piece: Callable[[str], dict[str, object]],
                  ) -> AsyncIterator[bytes]:
    try:
        async for chunk in token_chunks(context, generation):
            if chunk.finish_reason is None:
                if chunk.text:
                    yield _ndjson({**head, "created_at": now_iso(), **piece(chunk.text),
                                   "done": False})
                continue
            yield _ndjson({**head, "created_at": now_iso(), **piece(chunk.text),
                           **timing.final_fields(chunk.usage, chunk.finish_reason)})
    except ApiError as error:
        yield _ndjson(error.body("ollama"))


async def chat(body: ChatRequest, request: Request, context: Context) -> Response:
    timing = Timing()
    params = chat_params(body, resolve_card(context, model_name(body.model)))
    generation = await open_generation(context, params, request)
    timing.first_token = time.monotonic_ns()  # the first chunk has arrived by now
    return await _answer(context, request, body.model, generation, timing, body.stream,
                         lambda text: {"message": {"role": "assistant", "content": text}})


async def generate(body: GenerateRequest, request: Request, context: Context) -> Response:
    timing = Timing()
    if not body.prompt:
        return await _load_only(context, body)
    params = generate_params(body, resolve_card(context, model_name(body.model)))
    generation = await open_generation(context, params, request)
    timing.first_token = time.monotonic_ns()
    return await _answer(context, request, body.model, generation, timing, body.stream,
                         lambda text: {"response": text})


async def _load_only(context: ApiContext, body: GenerateRequest) -> Response:
    """Ollama's way to load a model: an empty prompt generates nothing and answers once
    the model serves."""
    card = resolve_card(context, model_name(body.model))
    await ensure_serving(context, card.model_id)
    answer = {"model": body.model, "created_at": now_iso(), "response": "", "done": True,
              "done_reason": "load"}
    if body.stream:
        return Response(_ndjson(answer), media_type="application/x-ndjson")
    return JSONResponse(answer)


async def tags(context: Context) -> dict[str, object]:
    # Ollama lists the models it holds; the cluster's are those running or on some disk.
    return {"models": [tag_body(model.card)
                       for model in listed_models(context, everything=False)]}


async def show(body: ShowRequest, context: Context) -> dict[str, object]:
    name = body.model or body.name
    if not name:
        raise ApiError(400, "say which model: {\"model\": \"<name>\"}", param="model")
    card = resolve_card(context, model_name(name))
    return {"modelfile": f"# served by Skulk {__version__}\nFROM {card.model_id}\n",
            "parameters": "", "template": "", "details": model_details(card),
            "model_info": {"general.architecture": card.family,
                           f"{card.family}.block_count": card.n_layers,
                           f"{card.family}.context_length": card.context_length,
                           f"{card.family}.embedding_length": card.hidden_size,
                           f"{card.family}.attention.head_count": card.num_attention_heads,
                           f"{card.family}.attention.head_count_kv":
                               card.num_key_value_heads},
            "capabilities": ["completion"], "modified_at": "2024-01-01T00:00:00Z"}


async def ps(context: Context) -> dict[str, object]:
    running = {i.model_id for i in context.cluster.replica.state.instances.values()}
    models = []
    for model_id in sorted(running):
        card = context.cluster.catalog.resolve(model_id)
        if card is not None:
            models.append({**tag_body(card), "expires_at": "2100-01-01T00:00:00Z",
                           "size_vram": 0})
    return {"models": models}


async def version() -> dict[str, str]:
    return {"version": OLLAMA_VERSION}


_ROUTES: list[tuple[str, Callable[..., Awaitable[object]], str, str]] = [
    ("chat", chat, "POST", "Chat (Ollama dialect), NDJSON stream by default"),
    ("generate", generate, "POST", "Generate from a prompt (Ollama dialect)"),
    ("tags", tags, "GET", "Models running or held on a node's disk (Ollama dialect)"),
    ("show", show, "POST", "Details of one model (Ollama dialect)"),
    ("ps", ps, "GET", "Models loaded in the cluster (Ollama dialect)"),
    ("version", version, "GET", "The Ollama API version followed"),
]
for prefix in ("/api", "/ollama/api"):
    for name, endpoint, method, summary in _ROUTES:
        router.add_api_route(f"{prefix}/{name}", endpoint, methods=[method],
                             response_model=None, summary=summary,
                             operation_id=f"{prefix.strip('/').replace('/', '_')}_{name}")
