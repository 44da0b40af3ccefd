"""The OpenAI chat-completions dialect: lenient wire types in, strict parameters out."""

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from skulk.api.adapters import tool_calls
from skulk.api.adapters.keep_alive import KEEP_ALIVE_DESCRIPTION, keep_alive_seconds
from skulk.api.adapters.lenient import Lenient
from skulk.api.adapters.tool_calls import Tool, ToolCall
from skulk.api.errors import ApiError
from skulk.shared.types.chunks import FinishReason, TokenLogprob, Usage
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.tasks import (
    MAX_DRAFT_TOKENS,
    ChatMessage,
    DrafterChoice,
    GenerationParams,
    Role,
    SpeculativeParams,
)


class ContentPart(Lenient):
    type: str = Field(description="Only `text` parts are supported.")
    text: str | None = Field(default=None, description="The text of a `text` part.")


class WireFunctionCall(Lenient):
    name: str = Field(description="The function called.")
    arguments: str = Field(default="{}", description="Its arguments, as JSON text.")


class WireToolCall(Lenient):
    id: str = Field(default="", description="Id the tool's answer refers to.")
    type: Literal["function"] = Field(default="function", description="Always `function`.")
    function: WireFunctionCall = Field(description="The call.")


class WireMessage(Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"] = Field(
        description="Who said it; `developer` is treated as `system`.")
    content: str | list[ContentPart] | None = Field(default=None, description="What was said.")
    tool_calls: list[WireToolCall] | None = Field(
        default=None, description="Calls an assistant turn made.")
    tool_call_id: str | None = Field(default=None, description="The call a tool turn answers.")


class WireFunction(Lenient):
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$", description="Function name.")
    description: str = Field(default="", description="What it does.")
    parameters: dict[str, Any] = Field(default_factory=dict,
                                       description="JSON Schema of its arguments.")


class WireTool(Lenient):
    type: Literal["function"] = Field(description="Only `function` tools exist.")
    function: WireFunction = Field(description="The function.")


class NamedToolChoice(Lenient):
    type: Literal["function"] = Field(description="Always `function`.")
    function: WireFunctionCall | dict[str, str] = Field(description="`{\"name\": ...}`.")


class JsonSchemaFormat(Lenient):
    name: str = Field(default="response", description="Name of the schema.")
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema",
                                    description="The JSON Schema.")
    strict: bool | None = Field(default=None, description="Always enforced here.")


class ResponseFormat(Lenient):
    type: Literal["text", "json_object", "json_schema"] = Field(description="Output format.")
    json_schema: JsonSchemaFormat | None = Field(
        default=None, description="With `json_schema`: the schema, enforced by a grammar.")


class StreamOptions(Lenient):
    include_usage: bool = Field(default=False, description="End with a usage-only chunk.")


class WireSpeculative(Lenient):
    """Speculative decoding for this request (a Skulk extension). Greedy output is the
    same with or without it; sampled output keeps its distribution."""

    drafter: DrafterChoice = Field(
        description="`ngram` (prompt lookup, no weights), `draft_model` (a smaller model "
        "sharing the tokenizer), `remote` (a drafter on another node), or `none`.")
    max_draft: int | None = Field(
        default=None, ge=1, le=MAX_DRAFT_TOKENS,
        description="Most tokens proposed per round; the node's default when absent.")

    def params(self) -> SpeculativeParams:
        return SpeculativeParams(drafter=self.drafter, max_draft=self.max_draft)


class ChatCompletionRequest(Lenient):
    """`POST /v1/chat/completions`, as OpenAI defines it (the parts Skulk honours)."""

    model: str = Field(description="A model id or alias, see GET /v1/models.",
                       examples=["smollm2-135m"])
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
    top_k: int | None = Field(default=None, ge=1, description="Keep the k likeliest tokens "
                              "(an extension).")
    response_format: ResponseFormat | None = Field(
        default=None, description="`json_object` or `json_schema`: constrained decoding.")
    tools: list[WireTool] | None = Field(default=None, description="Functions it may call.")
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = Field(
        default=None, description="Whether and which function must be called.")
    logprobs: bool | None = Field(default=None, description="Report each token's log "
                                  "probability.")
    top_logprobs: int | None = Field(default=None, ge=0, le=20, description="With logprobs: "
                                     "how many likeliest alternatives to report per token.")
    speculative: WireSpeculative | None = Field(
        default=None, description="Ask for or refuse speculative decoding (an extension); "
        "absent: the node's default for the model.")
    keep_alive: str | float | None = Field(
        default=None, description=KEEP_ALIVE_DESCRIPTION + " (an extension)")


@dataclass
class ChatPlan:
    """How to run one chat request: the generation, and the tools it may answer with."""

    params: GenerationParams
    tools: list[Tool] = field(default_factory=list)
    forced: bool = False  # the output is exactly one call, constrained by a grammar

    def tool_calls_in(self, text: str) -> list[ToolCall]:
        return tool_calls.calls_in(text, self.tools, self.forced)


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


def _tool_plan(request: ChatCompletionRequest) -> tuple[list[Tool], Tool | None, bool]:
    """The tools offered, the one forced by name (if any), and whether a call is forced."""
    choice = request.tool_choice
    if not request.tools or choice == "none":
        return [], None, False
    tools = [Tool(t.function.name, t.function.description, t.function.parameters)
             for t in request.tools]
    if isinstance(choice, NamedToolChoice):
        function = choice.function
        name = function.name if isinstance(function, WireFunctionCall) else function.get("name")
        named = next((t for t in tools if t.name == name), None)
        if named is None:
            raise ApiError(400, f"tool_choice names '{name}', which is not among the tools",
                           param="tool_choice")
        return tools, named, True
    return tools, None, choice == "required"


def _json_output(request: ChatCompletionRequest) -> tuple[Literal["text", "json"], str | None]:
    fmt = request.response_format
    if fmt is None or fmt.type == "text":
        return "text", None
    if fmt.type == "json_object":
        return "json", None
    if fmt.json_schema is None or not fmt.json_schema.schema_:
        raise ApiError(400, "response_format json_schema needs json_schema.schema",
                       param="response_format.json_schema")
    return "json", json.dumps(fmt.json_schema.schema_)


def plan_chat(request: ChatCompletionRequest, card: ModelCard) -> ChatPlan:
    if request.n != 1:
        raise ApiError(400, "only n=1 is supported", param="n")
    if request.top_logprobs is not None and not request.logprobs:
        raise ApiError(400, "top_logprobs needs logprobs set to true", param="top_logprobs")
    stops = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
    if len(stops) > 4:
        raise ApiError(400, "at most 4 stop sequences are allowed", param="stop")
    tools, named, forced = _tool_plan(request)
    output, schema = _json_output(request)
    if forced:
        if output == "json":
            raise ApiError(400, "a forced tool call and response_format cannot be combined",
                           param="response_format")
        output, schema = "json", json.dumps(tool_calls.call_schema([named] if named else tools))
    messages = []
    if tools:
        messages.append(ChatMessage(role="system", content=tool_calls.system_prompt(tools)))
    for index, message in enumerate(request.messages):
        role: Role = "system" if message.role == "developer" else message.role
        text = _text_of(message, index)
        for call in message.tool_calls or []:
            text += tool_calls.render_call(call.function.name, call.function.arguments)
        messages.append(ChatMessage(role=role, content=text))
    params = GenerationParams(
        model_id=card.model_id, messages=messages,
        max_tokens=request.max_completion_tokens or request.max_tokens,
        temperature=request.temperature, top_p=request.top_p, top_k=request.top_k,
        seed=request.seed, stop=[s for s in stops if s], output=output, json_schema=schema,
        logprobs=(request.top_logprobs or 0) if request.logprobs else None,
        speculative=None if request.speculative is None else request.speculative.params(),
        keep_alive_seconds=keep_alive_seconds(request.keep_alive))
    return ChatPlan(params, tools, forced)


def tool_calls_body(calls: list[ToolCall], call_id_prefix: str) -> list[dict[str, object]]:
    return [{"id": f"call_{call_id_prefix}_{index}", "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
            for index, call in enumerate(calls)]


def usage_body(usage: Usage | None) -> dict[str, object] | None:
    if usage is None:
        return None
    body: dict[str, object] = {
        "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens}
    if usage.drafted_tokens:
        # OpenAI's names for predicted-output tokens kept and rejected, and ours.
        body["completion_tokens_details"] = {
            "accepted_prediction_tokens": usage.accepted_tokens,
            "rejected_prediction_tokens": usage.drafted_tokens - usage.accepted_tokens}
        body["speculative"] = {"drafter": usage.drafter,
                               "drafted_tokens": usage.drafted_tokens,
                               "accepted_tokens": usage.accepted_tokens}
    return body


def logprobs_body(entries: list[TokenLogprob] | None) -> dict[str, object] | None:
    if entries is None:
        return None
    return {"refusal": None, "content": [
        {"token": e.token, "logprob": e.logprob, "bytes": e.bytes,
         "top_logprobs": [{"token": t.token, "logprob": t.logprob, "bytes": t.bytes}
                          for t in e.top]} for e in entries]}


def completion_body(completion_id: str, created: int, model: str, text: str,
                    finish_reason: FinishReason | None, usage: Usage | None,
                    calls: list[dict[str, object]] | None = None,
                    logprobs: list[TokenLogprob] | None = None) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": None if calls else text}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": completion_id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if calls else finish_reason,
                     "logprobs": logprobs_body(logprobs)}],
        "usage": usage_body(usage),
    }


def chunk_body(completion_id: str, created: int, model: str, delta: dict[str, object],
               finish_reason: str | None = None,
               logprobs: list[TokenLogprob] | None = None) -> dict[str, object]:
    return {
        "id": completion_id, "object": "chat.completion.chunk", "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason,
                     "logprobs": logprobs_body(logprobs)}],
    }


def usage_chunk_body(completion_id: str, created: int, model: str,
                     usage: Usage | None) -> dict[str, object]:
    return {"id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model, "choices": [], "usage": usage_body(usage)}
