"""The Ollama dialect (`/api/chat`, `/api/generate`, ...): wire types in, bodies out.

Ollama streams by default (`stream` defaults to true) as newline-delimited JSON, names
models `name:tag` (a `:latest` tag is accepted and dropped), puts sampling options in
`options` (`num_predict` is max tokens), and reports durations in nanoseconds.
"""

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from skulk.api.adapters.keep_alive import KEEP_ALIVE_DESCRIPTION, keep_alive_seconds
from skulk.api.adapters.lenient import Lenient
from skulk.api.errors import ApiError
from skulk.shared.types.chunks import FinishReason, Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import ChatMessage, GenerationParams

OLLAMA_VERSION = "0.6.3"  # the Ollama API version these routes follow



class Options(Lenient):
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description="0 is greedy.")
    top_p: float | None = Field(default=None, gt=0.0, le=1.0, description="Nucleus mass.")
    top_k: int | None = Field(default=None, ge=1, description="Keep the k likeliest tokens.")
    seed: int | None = Field(default=None, description="Sampler seed.")
    num_predict: int | None = Field(default=None, description="Most tokens; -1 is unlimited.")
    stop: list[str] | None = Field(default=None, description="Stop sequences.")


class OllamaMessage(Lenient):
    role: Literal["system", "user", "assistant", "tool"] = Field(description="Who said it.")
    content: str = Field(default="", description="What was said.")
    images: list[str] | None = Field(default=None, description="Refused: text models only.")


class _OllamaRequest(Lenient):
    model: str = Field(description="A model id or alias (`:latest` is accepted).",
                       examples=["smollm2-135m"])
    stream: bool = Field(default=True, description="Stream NDJSON (Ollama's default).")
    format: Literal["json"] | dict[str, Any] | None = Field(
        default=None, description="`json`, or a JSON Schema: constrained decoding.")
    options: Options | None = Field(default=None, description="Sampling options.")
    keep_alive: str | float | None = Field(default=None, description=KEEP_ALIVE_DESCRIPTION)


class ChatRequest(_OllamaRequest):
    """`POST /api/chat`."""

    messages: list[OllamaMessage] = Field(min_length=1, description="The conversation.")


class GenerateRequest(_OllamaRequest):
    """`POST /api/generate`."""

    prompt: str = Field(default="", description="The prompt.")
    system: str | None = Field(default=None, description="System prompt.")
    raw: bool = Field(default=False, description="Skip the chat template.")


class ShowRequest(Lenient):
    """`POST /api/show`; older clients send `name`."""

    model: str | None = Field(default=None, description="The model.")
    name: str | None = Field(default=None, description="Older name of `model`.")


def model_name(name: str) -> str:
    return name.removesuffix(":latest")


def _params(request: _OllamaRequest, card: ModelCard, messages: list[ChatMessage],
            raw_prompt: str | None = None) -> GenerationParams:
    options = request.options or Options()
    output: Literal["text", "json"] = "text" if request.format is None else "json"
    schema = json.dumps(request.format) if isinstance(request.format, dict) else None
    max_tokens = options.num_predict if options.num_predict and options.num_predict > 0 \
        else None
    return GenerationParams(
        model_id=card.model_id, messages=messages, max_tokens=max_tokens,
        temperature=0.8 if options.temperature is None else options.temperature,
        top_p=options.top_p or 0.9, top_k=options.top_k, seed=options.seed,
        stop=[s for s in options.stop or [] if s], output=output, json_schema=schema,
        raw_prompt=raw_prompt, keep_alive_seconds=keep_alive_seconds(request.keep_alive))


def chat_params(request: ChatRequest, card: ModelCard) -> GenerationParams:
    for index, message in enumerate(request.messages):
        if message.images:
            raise ApiError(400, f"messages[{index}] carries images; {card.model_id} is a "
                           "text model")
    return _params(request, card, [ChatMessage(role=m.role, content=m.content)
                                   for m in request.messages])


def generate_params(request: GenerateRequest, card: ModelCard) -> GenerationParams:
    if request.raw:
        return _params(request, card, [], raw_prompt=request.prompt)
    messages = [ChatMessage(role="system", content=request.system)] if request.system else []
    messages.append(ChatMessage(role="user", content=request.prompt))
    return _params(request, card, messages)


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Timing:
    """Durations Ollama reports, in nanoseconds, measured at this API."""

    started: int = field(default_factory=time.monotonic_ns)
    first_token: int | None = None

    def final_fields(self, usage: Usage | None, finish: FinishReason | None) -> dict[str, object]:
        now = time.monotonic_ns()
        first = self.first_token or now
        return {"done": True, "done_reason": "length" if finish == "length" else "stop",
                "total_duration": now - self.started, "load_duration": 0,
                "prompt_eval_count": usage.prompt_tokens if usage else 0,
                "prompt_eval_duration": first - self.started,
                "eval_count": usage.completion_tokens if usage else 0,
                "eval_duration": now - first}


def model_details(card: ModelCard) -> dict[str, object]:
    source = card.sources[0] if card.sources else None
    quantization = source.filename.rsplit(".", 2)[-2] if source and source.filename.count(
        ".") >= 2 else ""
    return {"parent_model": "", "format": source.format if source else "",
            "family": card.family, "families": [card.family],
            "parameter_size": "", "quantization_level": quantization}


def tag_body(card: ModelCard) -> dict[str, object]:
    size = card.sources[0].size_bytes if card.sources else 0
    return {"name": f"{card.model_id}:latest", "model": f"{card.model_id}:latest",
            "modified_at": "2024-01-01T00:00:00Z", "size": size,
            "digest": f"skulk-{card.model_id}", "details": model_details(card)}
