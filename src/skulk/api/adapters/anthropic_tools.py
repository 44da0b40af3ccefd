"""Tools in the Anthropic Messages dialect: `tools` with `input_schema`, `tool_choice`
(`auto`, `any`, `tool` with a name, `none`), `tool_use` blocks in the reply and
`tool_use` / `tool_result` blocks in the history.

Calls go through the same convention as the OpenAI dialect (tool_calls.py): the tools are
described in the system prompt; `any` and a named tool constrain the output to one call
with a grammar built from the input schemas, so the `input` always validates; with `auto`
the reply is a call only when it holds a well-formed tagged one.
"""

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from skulk.api.adapters import tool_calls
from skulk.api.adapters.lenient import Lenient
from skulk.api.adapters.tool_calls import Tool, ToolCall
from skulk.api.errors import ApiError


class AnthropicTool(Lenient):
    name: str = Field(description="The tool's name.")
    description: str = Field(default="", description="What the tool does.")
    input_schema: dict[str, Any] = Field(description="JSON Schema of the tool's input.")


class ToolChoice(Lenient):
    type: Literal["auto", "any", "tool", "none"] = Field(
        description="`any`: call some tool; `tool`: call the one named; `none`: no call.")
    name: str | None = Field(default=None, description="With `tool`: which one.")


@dataclass
class ToolPlan:
    """The tools a request may answer with, and whether it must call one."""

    tools: list[Tool] = field(default_factory=list)
    forced: bool = False

    def calls_in(self, text: str) -> list[ToolCall]:
        return tool_calls.calls_in(text, self.tools, self.forced)


def tool_plan(tools: list[AnthropicTool] | None, choice: ToolChoice | None) -> ToolPlan:
    """Raises ApiError for a choice that names no given tool."""
    if not tools or (choice is not None and choice.type == "none"):
        return ToolPlan()
    given = [Tool(t.name, t.description, t.input_schema) for t in tools]
    if choice is None or choice.type == "auto":
        return ToolPlan(given)
    if choice.type == "any":
        return ToolPlan(given, forced=True)
    named = [t for t in given if t.name == choice.name]
    if not named:
        raise ApiError(400, f"tool_choice names '{choice.name}', which is not in tools",
                       param="tool_choice.name")
    return ToolPlan(named, forced=True)


def tool_use_blocks(calls: list[ToolCall], message_id: str) -> list[dict[str, object]]:
    return [{"type": "tool_use", "id": f"toolu_{message_id[-12:]}_{index}", "name": call.name,
             "input": json.loads(call.arguments)} for index, call in enumerate(calls)]
