"""`POST /v1/embeddings`: OpenAI embeddings, mean-pooled from the model's GGUF.

The request runs on the model's instance like a generation does, so any node serves it.
`encoding_format` `base64` (what the openai package asks for by default) packs float32
little-endian.
"""

import base64
import struct
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from skulk.api.consume import announce, client_gone, collect, open_generation
from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import GenerationParams

router = APIRouter(tags=["openai"])

MAX_INPUTS = 256


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str = Field(description="A model id or alias.", examples=["smollm2-135m"])
    input: str | list[str] | list[int] | list[list[int]] = Field(
        description="Text or texts to embed (token-id input is refused).")
    encoding_format: Literal["float", "base64"] = Field(default="float",
                                                        description="Vector encoding.")
    dimensions: int | None = Field(default=None, description="Refused unless the model's.")


def texts_of(request: EmbeddingRequest) -> list[str]:
    texts = [request.input] if isinstance(request.input, str) else request.input
    if not texts:
        raise ApiError(400, "input is empty: send a text or a list of texts", param="input")
    if not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "token-id input is not supported: send text", param="input")
    if len(texts) > MAX_INPUTS:
        raise ApiError(400, f"at most {MAX_INPUTS} inputs per request", param="input")
    strings = [t for t in texts if isinstance(t, str)]
    if any(not t for t in strings):
        raise ApiError(400, "inputs must not be empty strings", param="input")
    return strings


def _params(request: EmbeddingRequest, card: ModelCard) -> GenerationParams:
    if request.dimensions is not None and request.dimensions != card.hidden_size:
        raise ApiError(400, f"{card.model_id} embeds in {card.hidden_size} dimensions only",
                       param="dimensions")
    return GenerationParams(model_id=card.model_id, messages=[], embed=texts_of(request))


def encode(vector: list[float], encoding: str) -> list[float] | str:
    if encoding == "float":
        return vector
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


@router.post("/v1/embeddings", response_model=None,
             summary="Embed texts (OpenAI dialect), one unit vector per text")
async def embeddings(body: EmbeddingRequest, request: Request) -> Response:
    context: ApiContext = request.app.state.context
    generation = await open_generation(context, body.model, lambda card: _params(body, card))
    completion = await collect(context, generation, request)
    if completion is None:
        return client_gone().response()
    if completion.embeddings is None:
        raise ApiError(500, "the runner answered without embeddings", type="server_error")
    tokens = completion.usage.prompt_tokens if completion.usage else 0
    return JSONResponse({
        "object": "list", "model": body.model,
        "data": [{"object": "embedding", "index": index,
                  "embedding": encode(vector, body.encoding_format)}
                 for index, vector in enumerate(completion.embeddings)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}},
        headers=announce(generation))
