"""The OpenAI embeddings dialect (`POST /v1/embeddings`): texts in, unit vectors out.

`encoding_format` `base64` (what the openai package asks for by default) packs float32
little-endian.
"""

import base64
import struct
from typing import Literal

from pydantic import Field

from skulk.api.adapters.lenient import Lenient
from skulk.api.errors import ApiError
from skulk.shared.types.chunks import Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import GenerationParams

MAX_INPUTS = 256

EmbeddingEncoding = Literal["float", "base64"]


class EmbeddingRequest(Lenient):
    """`POST /v1/embeddings`, as OpenAI defines it (the parts Skulk honours)."""

    model: str = Field(description="A model id or alias.", examples=["smollm2-135m"])
    input: str | list[str] | list[int] | list[list[int]] = Field(
        description="Text or texts to embed (token-id input is refused).")
    encoding_format: EmbeddingEncoding = Field(default="float",
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


def to_generation_params(request: EmbeddingRequest, card: ModelCard) -> GenerationParams:
    if request.dimensions is not None and request.dimensions != card.hidden_size:
        raise ApiError(400, f"{card.model_id} embeds in {card.hidden_size} dimensions only",
                       param="dimensions")
    return GenerationParams(model_id=card.model_id, messages=[], embed=texts_of(request))


def encode(vector: list[float], encoding: EmbeddingEncoding) -> list[float] | str:
    if encoding == "float":
        return vector
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def embeddings_body(model: str, vectors: list[list[float]], encoding: EmbeddingEncoding,
                    usage: Usage | None) -> dict[str, object]:
    tokens = usage.prompt_tokens if usage else 0
    return {"object": "list", "model": model,
            "data": [{"object": "embedding", "index": index,
                      "embedding": encode(vector, encoding)}
                     for index, vector in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
