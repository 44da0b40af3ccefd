"""The legacy OpenAI text-completion dialect (`POST /v1/completions`): the prompt is
continued as is, without the chat template."""

from pydantic import Field

from skulk.api.adapters.keep_alive import KEEP_ALIVE_DESCRIPTION, keep_alive_seconds
from skulk.api.adapters.lenient import Lenient
from skulk.api.adapters.openai_chat import usage_body
from skulk.api.errors import ApiError
from skulk.shared.types.chunks import FinishReason, Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import GenerationParams


class CompletionRequest(Lenient):
    """`POST /v1/completions`, as OpenAI defines it (the parts Skulk honours)."""

    model: str = Field(description="A model id or alias, see GET /v1/models.",
                       examples=["smollm2-135m"])
    prompt: str | list[str] = Field(description="The text to continue (one prompt).")
    max_tokens: int | None = Field(default=16, ge=1, description="Most tokens (default 16).")
    temperature: float = Field(default=1.0, ge=0.0, le=2.0, description="0 is greedy.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus mass.")
    seed: int | None = Field(default=None, description="Sampler seed.")
    stop: str | list[str] | None = Field(default=None, description="Up to 4 stop sequences.")
    stream: bool = Field(default=False, description="Stream server-sent events.")
    echo: bool = Field(default=False, description="Prepend the prompt to the text.")
    n: int = Field(default=1, description="Number of choices; only 1 is supported.")
    logprobs: int | None = Field(default=None, description="Not available yet: refused.")
    keep_alive: str | float | None = Field(
        default=None, description=KEEP_ALIVE_DESCRIPTION + " (an extension)")


def prompt_of(request: CompletionRequest) -> str:
    if isinstance(request.prompt, str):
        return request.prompt
    if len(request.prompt) != 1:
        raise ApiError(400, "send one prompt per request (a list of exactly one string)",
                       param="prompt")
    return request.prompt[0]


def to_generation_params(request: CompletionRequest, card: ModelCard) -> GenerationParams:
    if request.n != 1:
        raise ApiError(400, "only n=1 is supported", param="n")
    if request.logprobs is not None:
        raise ApiError(400, "logprobs are not available from Skulk's engines yet; leave "
                       "logprobs unset", param="logprobs")
    stops = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
    if len(stops) > 4:
        raise ApiError(400, "at most 4 stop sequences are allowed", param="stop")
    prompt = prompt_of(request)
    if not prompt:
        raise ApiError(400, "the prompt is empty", param="prompt")
    return GenerationParams(model_id=card.model_id, messages=[], raw_prompt=prompt,
                            max_tokens=request.max_tokens, temperature=request.temperature,
                            top_p=request.top_p, seed=request.seed,
                            stop=[s for s in stops if s],
                            keep_alive_seconds=keep_alive_seconds(request.keep_alive))


def completion_body(completion_id: str, created: int, model: str, text: str,
                    finish_reason: FinishReason | None, usage: Usage | None,
                    ) -> dict[str, object]:
    return {"id": completion_id, "object": "text_completion", "created": created,
            "model": model, "choices": [{"index": 0, "text": text, "logprobs": None,
                                         "finish_reason": finish_reason}],
            "usage": usage_body(usage)}
