import json

import pytest

from skulk.api.adapters.anthropic_messages import MessagesRequest, to_generation_params
from skulk.api.adapters.anthropic_tools import tool_use_blocks
from skulk.api.errors import ApiError
from skulk.testing import factories as f

WEATHER = {"name": "get_weather", "description": "Weather now",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
ASK = [{"role": "user", "content": "Weather in Paris?"}]


def request(**fields: object) -> MessagesRequest:
    return MessagesRequest.model_validate({"model": "m", "max_tokens": 32, "messages": ASK,
                                           "tools": [WEATHER], **fields})


def test_any_and_a_named_tool_force_one_call_by_its_schema() -> None:
    for choice in ({"type": "any"}, {"type": "tool", "name": "get_weather"}):
        params, plan = to_generation_params(request(tool_choice=choice), f.added_card())
        assert plan.forced and params.output == "json" and params.json_schema is not None
        schema = json.loads(params.json_schema)
        assert schema["properties"]["arguments"] == WEATHER["input_schema"]
        assert "get_weather" in params.messages[0].content
        [call] = plan.calls_in('{"name": "get_weather", "arguments": {"city": "Paris"}}')
        [block] = tool_use_blocks([call], "msg_abc")
        assert block["name"] == "get_weather" and block["input"] == {"city": "Paris"}


def test_auto_reads_a_tagged_call_and_none_offers_no_tools() -> None:
    params, plan = to_generation_params(request(), f.added_card())
    assert not plan.forced and params.output == "text"
    assert [c.name for c in plan.calls_in(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>')] == [
        "get_weather"]
    params, plan = to_generation_params(request(tool_choice={"type": "none"}), f.added_card())
    assert plan.tools == [] and params.messages[0].role == "user"


def test_a_choice_naming_no_given_tool_is_a_400() -> None:
    with pytest.raises(ApiError, match="not in tools"):
        to_generation_params(request(tool_choice={"type": "tool", "name": "x"}), f.added_card())


def test_tool_blocks_in_the_history_become_text_the_model_reads() -> None:
    params, _ = to_generation_params(request(messages=[
        *ASK, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "P"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "18 C"}]}]), f.added_card())
    assert "<tool_call>" in params.messages[2].content
    assert params.messages[3].content == "18 C"
