"""The OpenAI chat-completions dialect: lenient wire types in, strict parameters out."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skulk.api.errors import ApiError
from skulk.shared.types.chunks import FinishReason, Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import ChatMessage, GenerationParams, Role


class _Lenient(BaseModel):
    # OpenAI ignores fields it does not use; so do we, so clients' extras never break.
    model_config = ConfigDict(extra="ignore")


class ContentPart(_Lenient):
    type: str = Field(description="Only `text` parts are supported.")
    text: str | None = Field(default=None, description="The text of a `text` part.")


class WireMessage(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"] = Field(
        description="Who said it; `developer` is treated as `system`.")
    content: str | list[ContentPart] | None = Field(default=None, description="What was said.")


class StreamOptions(_Lenient):
    include_usage: bool = Field(default=False, description="End with a usage-only chunk.")


class ChatCompletionRequest(_Lenient):
    """`POST /v1/chat/completions`, as OpenAI defines it (the parts Skulk honours)."""

    model: str = Field(description="A model id or alias, see GET /v1/models.")
    messages: list[WireMessage] = Field(min_length=1, description="The conversation.")
    max_tokens: int | None = Field(default=None, ge=1, description="Most tokens to generate.")
    max_completion_tokens: int | None = Field(default=None, ge=1,
                                              description="Newer name of max_tokens.")
    temperature: float = Field(default=1.0, ge=0.0, le=2.0, description="0 is greedy.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus mass.")
    seed: int | None = Field(default=None, description="Sampler seed.")
    stop: str | list[str] | None = Field(default=None, description="Up to 4 stop sequences.")
    stream: bool = Field(default=False, description="Stream server-sent events.")
    stream_options: StreamOptions | None = Field(default=None, description="Stream options.")
    n: int = Field(default=1, description="Number of choices; only 1 is supported.")


def _text_of(message: WireMessage, index: int) -> str:
    if message.content is None or isinstance(message.content, str):
        return message.content or ""
    texts = []
    for part in message.content:
        if part.type != "text" or part.text is None:
            raise ApiError(400, f"messages[{index}] has a '{part.type}' part; this model "
                           "takes text parts only", param=f"messages.{index}.content")
        texts.append(part.text)
    return "".join(texts)


def to_generation_params(request: ChatCompletionRequest, card: ModelCard) -> GenerationParams:
    if request.n != 1:
        raise ApiError(400, "only n=1 is supported", param="n")
    stops = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
    if len(stops) > 4:
        raise ApiError(400, "at most 4 stop sequences are allowed", param="stop")
    messages = []
    for index, message in enumerate(request.messages):
        role: Role = "system" if message.role == "developer" else message.role
        messages.append(ChatMessage(role=role, content=_text_of(message, index)))
    return GenerationParams(
        model_id=card.model_id, messages=messages,
        max_tokens=request.max_completion_tokens or request.max_tokens,
        temperature=request.temperature, top_p=request.top_p, seed=request.seed,
        stop=[s for s in stops if s])


def usage_body(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens}


def completion_body(completion_id: str, created: int, model: str, text: str,
                    finish_reason: FinishReason | None, usage: Usage | None) -> dict[str, object]:
    return {
        "id": completion_id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish_reason, "logprobs": None}],
        "usage": usage_body(usage),
    }


def chunk_body(completion_id: str, created: int, model: str, delta: dict[str, str],
               finish_reason: FinishReason | None = None) -> dict[str, object]:
    return {
        "id": completion_id, "object": "chat.completion.chunk", "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason,
                     "logprobs": None}],
    }


def usage_chunk_body(completion_id: str, created: int, model: str,
                     usage: Usage | None) -> dict[str, object]:
    return {"id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model, "choices": [], "usage": usage_body(usage)}
