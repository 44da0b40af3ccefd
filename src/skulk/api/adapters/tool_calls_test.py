import json

import pytest

from skulk.api.adapters.tool_calls import (
    Tool,
    call_schema,
    parse_forced,
    parse_tagged,
    render_call,
    system_prompt,
)

WEATHER = Tool("get_weather", "Weather in a city",
               {"type": "object", "properties": {"city": {"type": "string"}},
                "required": ["city"]})
TIME = Tool("get_time", "Time now", {})


def test_the_prompt_names_every_tool_and_the_call_format() -> None:
    prompt = system_prompt([WEATHER, TIME])
    assert "get_weather" in prompt and "get_time" in prompt and "<tool_call>" in prompt


def test_one_tool_schema_fixes_the_name_and_several_are_alternatives() -> None:
    one = call_schema([WEATHER])
    assert one["properties"]["name"] == {"const": "get_weather"}
    assert one["properties"]["arguments"] == WEATHER.parameters
    both = call_schema([WEATHER, TIME])
    assert [v["properties"]["name"]["const"] for v in both["anyOf"]] == ["get_weather",
                                                                         "get_time"]
    assert both["anyOf"][1]["properties"]["arguments"] == {"type": "object"}


def test_forced_output_parses_to_a_call_with_json_arguments() -> None:
    call = parse_forced('{"name": "get_weather", "arguments": {"city": "Oslo"}}')
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Oslo"}
    with pytest.raises(ValueError):
        parse_forced('{"name": "get_weather", "argum')


def test_tagged_calls_are_found_only_when_well_formed_and_known() -> None:
    text = ('Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}'
            '</tool_call> and <tool_call>{"name": "nope", "arguments": {}}</tool_call>'
            ' <tool_call>{broken</tool_call>')
    calls = parse_tagged(text, {"get_weather", "get_time"})
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather",
                                                                  {"city": "Oslo"})]
    assert parse_tagged("no calls here", {"get_weather"}) == []


def test_an_earlier_call_renders_back_into_the_tagged_form() -> None:
    rendered = render_call("get_weather", '{"city": "Oslo"}')
    assert parse_tagged(rendered, {"get_weather"})[0].arguments == '{"city": "Oslo"}'
