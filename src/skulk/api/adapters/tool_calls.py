"""Tool calls for models whose chat template knows no tools.

The tools are described in the system prompt, and a call is written as a JSON object
`{"name": ..., "arguments": {...}}` inside `<tool_call>` tags (the Hermes convention many
small models were tuned on). When a call is required (`tool_choice` = `required` or a named
function) the output is constrained by a grammar built from the tools' parameter schemas,
so even a 135M model produces a well-formed call; with `auto`, the reply is parsed and
is a call only if it contains a well-formed tagged call.
"""

import json
import re
from dataclasses import dataclass
from typing import Any

from skulk.api.errors import ApiError

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_TAGGED = re.compile(re.escape(OPEN) + r"\s*(\{.*?\})\s*" + re.escape(CLOSE), re.DOTALL)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as OpenAI sends it


def system_prompt(tools: list[Tool]) -> str:
    described = "\n".join(json.dumps({"name": t.name, "description": t.description,
                                      "parameters": t.parameters}) for t in tools)
    return ("You can call these functions:\n" + described + "\n\nTo call one, reply with "
            f'only {OPEN}{{"name": <function name>, "arguments": <arguments object>}}{CLOSE}.')


def call_schema(tools: list[Tool]) -> dict[str, Any]:
    """The JSON Schema of one call to any of `tools`."""
    variants = [{"type": "object", "additionalProperties": False,
                 "required": ["name", "arguments"],
                 "properties": {"name": {"const": t.name},
                                "arguments": t.parameters or {"type": "object"}}}
                for t in tools]
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


def parse_forced(text: str) -> ToolCall:
    """The call in constrained output (raises ValueError if the output was cut short)."""
    call = json.loads(text)
    return ToolCall(call["name"], json.dumps(call["arguments"]))


def parse_tagged(text: str, names: set[str]) -> list[ToolCall]:
    """Well-formed tagged calls of known functions in free output; [] when there are none."""
    calls = []
    for match in _TAGGED.finditer(text):
        try:
            call = json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
        if isinstance(call, dict) and call.get("name") in names and isinstance(
                call.get("arguments", {}), dict):
            calls.append(ToolCall(call["name"], json.dumps(call.get("arguments", {}))))
    return calls


def render_call(name: str, arguments: str) -> str:
    """An earlier call, as the assistant turn that made it."""
    try:
        parsed: object = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        parsed = arguments
    return f"{OPEN}{json.dumps({'name': name, 'arguments': parsed})}{CLOSE}"


def calls_in(text: str, tools: list[Tool], forced: bool) -> list[ToolCall]:
    """The calls a reply makes: the one forced call (its grammar made the text exactly one;
    an ApiError when max_tokens cut it short), or the tagged calls of given tools."""
    if not tools:
        return []
    if forced:
        try:
            return [parse_forced(text)]
        except (ValueError, KeyError) as error:
            raise ApiError(500, "the model's call was cut short; raise max_tokens",
                           type="server_error", code="tool_call_incomplete") from error
    return parse_tagged(text, {t.name for t in tools})
