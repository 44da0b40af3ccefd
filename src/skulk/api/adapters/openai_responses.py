"""The OpenAI Responses dialect (`POST /v1/responses`): input items in, a response object
or its event stream out. Text in and out, `instructions`, `text.format` (JSON object or
schema, grammar-enforced); tools are refused (use chat completions for tools)."""

import json
from typing import Any, Literal

from pydantic import Field

from skulk.api.adapters.keep_alive import KEEP_ALIVE_DESCRIPTION, keep_alive_seconds
from skulk.api.adapters.lenient import Lenient
from skulk.api.errors import ApiError
from skulk.shared.types.chunks import FinishReason, Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import ChatMessage, GenerationParams, Role


class InputPart(Lenient):
    type: str = Field(description="`input_text` (or `output_text` in earlier turns).")
    text: str | None = Field(default=None, description="The text.")


class InputItem(Lenient):
    type: Literal["message"] = Field(default="message", description="Only messages.")
    role: Literal["system", "developer", "user", "assistant"] = Field(description="Who.")
    content: str | list[InputPart] = Field(description="Text, or text parts.")


class TextFormat(Lenient):
    type: Literal["text", "json_object", "json_schema"] = Field(description="Output format.")
    name: str | None = Field(default=None, description="Schema name.")
    schema_: dict[str, Any] | None = Field(default=None, alias="schema",
                                           description="The JSON Schema (json_schema).")


class TextOptions(Lenient):
    format: TextFormat | None = Field(default=None, description="Output format.")


class ResponsesRequest(Lenient):
    """`POST /v1/responses` (the parts Skulk honours; no server-side state)."""

    model: str = Field(description="A model id or alias.", examples=["smollm2-135m"])
    input: str | list[InputItem] = Field(description="A prompt, or conversation items.",
                                         min_length=1)
    instructions: str | None = Field(default=None, description="System instructions.")
    max_output_tokens: int | None = Field(default=None, ge=1, description="Most tokens.")
    temperature: float = Field(default=1.0, ge=0.0, le=2.0, description="0 is greedy.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus mass.")
    stream: bool = Field(default=False, description="Stream typed events.")
    text: TextOptions | None = Field(default=None, description="Output format options.")
    tools: list[dict[str, Any]] | None = Field(default=None, description="Refused if any.")
    previous_response_id: str | None = Field(default=None, description="Refused: stateless.")
    keep_alive: str | float | None = Field(
        default=None, description=KEEP_ALIVE_DESCRIPTION + " (an extension)")


def _text(content: str | list[InputPart], where: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for index, part in enumerate(content):
        if part.type not in ("input_text", "output_text", "text") or part.text is None:
            raise ApiError(400, f"{where}.{index} is a '{part.type}' part; this model takes "
                           "text only", param=f"{where}.{index}")
        texts.append(part.text)
    return "".join(texts)


def to_generation_params(request: ResponsesRequest, card: ModelCard) -> GenerationParams:
    if request.tools:
        raise ApiError(400, "tools are served on /v1/chat/completions; /v1/responses takes "
                       "text only here", param="tools")
    if request.previous_response_id:
        raise ApiError(400, "Skulk keeps no responses: send the whole conversation in "
                       "`input` (or use /v1/sessions)", param="previous_response_id")
    messages = []
    if request.instructions:
        messages.append(ChatMessage(role="system", content=request.instructions))
    if isinstance(request.input, str):
        messages.append(ChatMessage(role="user", content=request.input))
    else:
        for index, item in enumerate(request.input):
            role: Role = "system" if item.role == "developer" else item.role
            messages.append(ChatMessage(role=role, content=_text(item.content,
                                                                 f"input.{index}.content")))
    output: Literal["text", "json"] = "text"
    schema: str | None = None
    fmt = request.text.format if request.text else None
    if fmt is not None and fmt.type != "text":
        output = "json"
        if fmt.type == "json_schema":
            if not fmt.schema_:
                raise ApiError(400, "text.format json_schema needs a schema",
                               param="text.format.schema")
            schema = json.dumps(fmt.schema_)
    return GenerationParams(model_id=card.model_id, messages=messages,
                            max_tokens=request.max_output_tokens,
                            temperature=request.temperature, top_p=request.top_p,
                            output=output, json_schema=schema,
                            keep_alive_seconds=keep_alive_seconds(request.keep_alive))


def message_item(item_id: str, text: str, done: bool) -> dict[str, object]:
    return {"type": "message", "id": item_id, "role": "assistant",
            "status": "completed" if done else "in_progress",
            "content": [{"type": "output_text", "text": text, "annotations": []}] if done
            else []}


def response_body(response_id: str, created: int, request: ResponsesRequest,
                  item_id: str, text: str | None, finish: FinishReason | None,
                  usage: Usage | None) -> dict[str, object]:
    """The response object; `text` None means still in progress."""
    done = text is not None
    incomplete = done and finish == "length"
    return {
        "id": response_id, "object": "response", "created_at": created, "model": request.model,
        "status": ("incomplete" if incomplete else "completed") if done else "in_progress",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None, "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens, "temperature": request.temperature,
        "top_p": request.top_p, "parallel_tool_calls": False, "tool_choice": "none",
        "tools": [], "truncation": "disabled", "metadata": {},
        "text": {"format": {"type": "text"}},
        "output": [message_item(item_id, text, True)] if text is not None else [],
        "usage": None if usage is None else {
            "input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens_details": {"reasoning_tokens": 0}},
    }
