"""`POST /v1/embeddings`: OpenAI embeddings, mean-pooled from the model's GGUF.

The request runs on the model's instance like a generation does, so any node serves it.
"""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from skulk.api.adapters.openai_embeddings import (
    EmbeddingRequest,
    embeddings_body,
    to_generation_params,
)
from skulk.api.consume import announce, client_gone, collect
from skulk.api.context import Context
from skulk.api.errors import ApiError
from skulk.api.generation import open_generation
from skulk.api.serving import resolve_card

router = APIRouter(tags=["openai"])


@router.post("/v1/embeddings", response_model=None,
             summary="Embed texts (OpenAI dialect), one unit vector per text")
async def embeddings(body: EmbeddingRequest, request: Request, context: Context) -> Response:
    params = to_generation_params(body, resolve_card(context, body.model))
    generation = await open_generation(context, params, request)
    completion = await collect(context, generation, request)
    if completion is None:
        return client_gone().response()
    if completion.embeddings is None:
        raise ApiError(500, "the runner answered without embeddings", type="server_error")
    return JSONResponse(embeddings_body(body.model, completion.embeddings,
                                        body.encoding_format, completion.usage),
                        headers=announce(generation))
