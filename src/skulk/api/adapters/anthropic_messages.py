"""The Anthropic Messages dialect (`POST /v1/messages`): wire types in, bodies and events out.

As Anthropic requires: `max_tokens` is mandatory, the system prompt is a top-level field,
turns alternate user/assistant, temperature is 0..1. Tools are anthropic_tools.py's;
image blocks are refused with a clear error rather than silently dropped.
"""

import json
from typing import Any, Literal

from pydantic import Field

from skulk.api.adapters import tool_calls
from skulk.api.adapters.anthropic_tools import AnthropicTool, ToolChoice, ToolPlan, tool_plan
from skulk.api.adapters.keep_alive import KEEP_ALIVE_DESCRIPTION, keep_alive_seconds
from skulk.api.adapters.lenient import Lenient
from skulk.api.errors import ApiError
from skulk.shared.types.chunks import FinishReason, Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import ChatMessage, GenerationParams


class TextBlock(Lenient):
    type: str = Field(description="`text`, `tool_use` or `tool_result`.")
    text: str | None = Field(default=None, description="The text of a `text` block.")
    name: str | None = Field(default=None, description="A `tool_use` block's tool.")
    input: dict[str, Any] | None = Field(default=None,
                                         description="A `tool_use` block's input.")
    content: str | list["TextBlock"] | None = Field(
        default=None, description="A `tool_result` block's content.")


class AnthropicMessage(Lenient):
    role: Literal["user", "assistant"] = Field(description="Who said it.")
    content: str | list[TextBlock] = Field(description="Text, or a list of text blocks.")


class MessagesRequest(Lenient):
    """`POST /v1/messages`, as Anthropic defines it (the parts Skulk honours)."""

    model: str = Field(description="A model id or alias, see GET /v1/models.",
                       examples=["smollm2-135m"])
    max_tokens: int = Field(ge=1, description="Most tokens to generate (required).")
    messages: list[AnthropicMessage] = Field(min_length=1, description="The conversation.")
    system: str | list[TextBlock] | None = Field(default=None, description="System prompt.")
    stop_sequences: list[str] | None = Field(default=None, description="Custom stops.")
    temperature: float = Field(default=1.0, ge=0.0, le=1.0, description="0 is greedy.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus mass.")
    top_k: int | None = Field(default=None, ge=1, description="Keep the k likeliest tokens.")
    stream: bool = Field(default=False, description="Stream server-sent events.")
    keep_alive: str | float | None = Field(
        default=None, description=KEEP_ALIVE_DESCRIPTION + " (an extension)")
    tools: list[AnthropicTool] | None = Field(default=None, description="Tools it may call.")
    tool_choice: ToolChoice | None = Field(default=None, description="Whether it must call.")


def _text(content: str | list[TextBlock], where: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for index, block in enumerate(content):
        if block.type == "tool_use" and block.name is not None:
            texts.append(tool_calls.render_call(block.name, json.dumps(block.input or {})))
        elif block.type == "tool_result":
            texts.append(_text(block.content or "", f"{where}.{index}.content"))
        elif block.type != "text" or block.text is None:
            raise ApiError(400, f"{where}.{index} is a '{block.type}' block; this model takes "
                           "text and tool blocks only", param=f"{where}.{index}")
        else:
            texts.append(block.text)
    return "".join(texts)


def to_generation_params(request: MessagesRequest, card: ModelCard
                         ) -> tuple[GenerationParams, ToolPlan]:
    """The generation, and the tools its reply may call."""
    plan = tool_plan(request.tools, request.tool_choice)
    messages = []
    if plan.tools:
        messages.append(ChatMessage(role="system", content=tool_calls.system_prompt(plan.tools)))
    if request.system:
        messages.append(ChatMessage(role="system", content=_text(request.system, "system")))
    for index, message in enumerate(request.messages):
        messages.append(ChatMessage(role=message.role,
                                    content=_text(message.content, f"messages.{index}.content")))
    schema = json.dumps(tool_calls.call_schema(plan.tools)) if plan.forced else None
    return GenerationParams(
        model_id=card.model_id, messages=messages, max_tokens=request.max_tokens,
        temperature=request.temperature, top_p=request.top_p, top_k=request.top_k,
        stop=[s for s in request.stop_sequences or [] if s],
        output="json" if plan.forced else "text", json_schema=schema,
        keep_alive_seconds=keep_alive_seconds(request.keep_alive)), plan


def stop_reason(finish: FinishReason | None, stop_sequence: str | None) -> str:
    if stop_sequence is not None:
        return "stop_sequence"
    return "max_tokens" if finish == "length" else "end_turn"


def usage_body(usage: Usage | None) -> dict[str, int]:
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens}


def message_body(message_id: str, model: str, text: str, finish: FinishReason | None,
                 stop_sequence: str | None, usage: Usage | None,
                 tool_uses: list[dict[str, object]] | None = None) -> dict[str, object]:
    content: list[dict[str, object]] = tool_uses or [{"type": "text", "text": text}]
    reason = "tool_use" if tool_uses else stop_reason(finish, stop_sequence)
    return {"id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": reason, "stop_sequence": stop_sequence,
            "usage": usage_body(usage)}


def event(name: str, body: dict[str, object]) -> bytes:
    """One server-sent event as Anthropic sends it: a named event, its type repeated."""
    return f"event: {name}\ndata: {json.dumps({'type': name, **body})}\n\n".encode()


def message_start(message_id: str, model: str, input_tokens: int) -> bytes:
    return event("message_start", {"message": {
        "id": message_id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 0}}})
