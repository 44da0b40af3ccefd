"""The official `anthropic` and `ollama` clients against a real node serving the bundled
model: each streams and non-streams a chat and gets errors as its own exception types."""

import json
from collections.abc import Iterator

import anthropic
import httpx
import ollama
import pytest

from skulk.testing.function_schemas import function_schemas, validate_answer
from tests.node_process import NodeProcess

QUESTION = "Name three colours of the rainbow."
# The anthropic SDK (2.x) no longer takes sampling parameters as arguments: send them raw.
GREEDY = {"temperature": 0}


def anthropic_client(node: NodeProcess) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=node.url, api_key="unused", max_retries=0)


def ollama_client(node: NodeProcess) -> ollama.Client:
    return ollama.Client(host=node.url)


def test_anthropic_message_whole(serving_node: NodeProcess) -> None:
    reply = anthropic_client(serving_node).messages.create(
        model="smollm2-135m", max_tokens=24, extra_body=GREEDY, system="Be brief.",
        messages=[{"role": "user", "content": QUESTION}])
    assert reply.role == "assistant" and reply.type == "message"
    assert reply.content[0].type == "text" and reply.content[0].text
    assert reply.stop_reason in ("end_turn", "max_tokens")
    assert reply.usage.input_tokens > 5 and reply.usage.output_tokens > 0


def test_anthropic_stream_has_the_event_sequence_and_the_same_text(
        serving_node: NodeProcess) -> None:
    client = anthropic_client(serving_node)
    whole = client.messages.create(model="smollm2-135m", max_tokens=24, extra_body=GREEDY,
                                   messages=[{"role": "user", "content": QUESTION}])
    with client.messages.stream(model="smollm2-135m", max_tokens=24, extra_body=GREEDY,
                                messages=[{"role": "user", "content": QUESTION}]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_start" in kinds and "content_block_stop" in kinds
    assert kinds.count("text") > 3
    assert final.content[0].text == whole.content[0].text  # type: ignore[union-attr]
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_anthropic_stop_sequence_is_reported(serving_node: NodeProcess) -> None:
    client = anthropic_client(serving_node)
    whole = client.messages.create(model="smollm2-135m", max_tokens=40, extra_body=GREEDY,
                                   messages=[{"role": "user", "content": QUESTION}])
    text = whole.content[0].text  # type: ignore[union-attr]
    stop = text.split()[2]
    cut = client.messages.create(model="smollm2-135m", max_tokens=40, extra_body=GREEDY,
                                 stop_sequences=[stop],
                                 messages=[{"role": "user", "content": QUESTION}])
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert cut.content[0].text == text[:text.index(stop)]  # type: ignore[union-attr]


def test_anthropic_errors_are_its_own_exceptions(serving_node: NodeProcess) -> None:
    client = anthropic_client(serving_node)
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.messages.create(model="no-such-model", max_tokens=8,
                               messages=[{"role": "user", "content": "Hi"}])
    assert missing.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    response = httpx.post(f"{serving_node.url}/v1/messages", json={
        "model": "smollm2-135m", "messages": [{"role": "user", "content": "Hi"}]})
    assert response.status_code == 400, "max_tokens is required, as Anthropic requires"
    assert response.json()["type"] == "error"
    assert "max_tokens" in response.json()["error"]["message"]


def anthropic_tool_use_turn(node: NodeProcess) -> None:
    """A forced `tool_use` turn, whole and streamed, then the history with its result."""
    client = anthropic_client(node)
    schema = function_schemas()["get_weather"]
    tools: list[anthropic.types.ToolParam] = [
        {"name": "get_weather", "description": "The current weather", "input_schema": schema}]
    ask: list[anthropic.types.MessageParam] = [
        {"role": "user", "content": "What is the weather in Paris?"}]
    reply = client.messages.create(model="smollm2-135m", max_tokens=64, extra_body=GREEDY,
                                   tools=tools, tool_choice={"type": "any"}, messages=ask)
    assert reply.stop_reason == "tool_use"
    [use] = reply.content
    assert use.type == "tool_use" and use.name == "get_weather"
    validate_answer(schema, json.dumps(use.input))
    with client.messages.stream(model="smollm2-135m", max_tokens=64, extra_body=GREEDY,
                                tools=tools, messages=ask,
                                tool_choice={"type": "tool", "name": "get_weather"}) as stream:
        streamed = stream.get_final_message()
    assert streamed.content[0].type == "tool_use" and streamed.content[0].input == use.input
    follow = httpx.post(f"{node.url}/v1/messages", timeout=180, json={
        "model": "smollm2-135m", "max_tokens": 16, "temperature": 0, "tools": tools,
        "messages": [*ask, {"role": "assistant", "content": [use.model_dump()]}, {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                         "content": "18 degrees and sunny"}]}]})
    assert follow.status_code == 200, follow.text
    assert follow.json()["stop_reason"] in ("end_turn", "max_tokens", "tool_use")


def test_anthropic_tool_use(serving_node: NodeProcess) -> None:
    anthropic_tool_use_turn(serving_node)


def test_ollama_chat_whole_and_streamed(serving_node: NodeProcess) -> None:
    client = ollama_client(serving_node)
    options = {"temperature": 0, "num_predict": 24}
    whole = client.chat(model="smollm2-135m", options=options,
                        messages=[{"role": "user", "content": QUESTION}])
    assert whole.message.role == "assistant" and whole.message.content
    assert whole.done and whole.done_reason in ("stop", "length")
    assert whole.eval_count and whole.prompt_eval_count
    parts = list(client.chat(model="smollm2-135m:latest", options=options, stream=True,
                             messages=[{"role": "user", "content": QUESTION}]))
    assert len(parts) > 3 and parts[-1].done and not parts[0].done
    assert "".join(p.message.content or "" for p in parts) == whole.message.content


def test_ollama_generate_and_json_format(serving_node: NodeProcess) -> None:
    client = ollama_client(serving_node)
    reply = client.generate(model="smollm2-135m", prompt=QUESTION,
                            options={"temperature": 0, "num_predict": 16})
    assert reply.response and reply.done
    schema = {"type": "object", "properties": {"colour": {"type": "string", "maxLength": 12}},
              "required": ["colour"], "additionalProperties": False}
    constrained = client.generate(model="smollm2-135m", prompt="Pick a colour.",
                                  format=schema, options={"num_predict": 40, "seed": 1})
    import json
    assert set(json.loads(constrained.response or "")) == {"colour"}


def test_ollama_empty_prompt_only_loads_the_model(serving_node: NodeProcess) -> None:
    client = ollama_client(serving_node)
    whole = client.generate(model="smollm2-135m", prompt="", raw=True)
    assert whole.done and whole.done_reason == "load" and whole.response == ""
    streamed = list(client.generate(model="smollm2-135m", prompt="", stream=True))
    assert [(p.done, p.done_reason) for p in streamed] == [(True, "load")]


def test_ollama_model_listing_routes(serving_node: NodeProcess) -> None:
    client = ollama_client(serving_node)
    assert "smollm2-135m:latest" in [m.model for m in client.list().models]
    shown = client.show("smollm2-135m")
    assert shown.details is not None and shown.details.family == "llama"
    assert "smollm2-135m:latest" in [m.model for m in client.ps().models]
    assert httpx.get(f"{serving_node.url}/ollama/api/version").json()["version"]


def test_ollama_errors_are_its_own_exceptions(serving_node: NodeProcess) -> None:
    with pytest.raises(ollama.ResponseError) as missing:
        ollama_client(serving_node).chat(model="no-such-model",
                                         messages=[{"role": "user", "content": "Hi"}])
    assert missing.value.status_code == 404 and "no-such-model" in missing.value.error


@pytest.fixture(scope="module")
def keyed_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    """A node that requires an API key (no model needed: the key is checked first)."""
    node = NodeProcess(tmp_path_factory.mktemp("keyed"), "--api-key", "right-key")
    node.start()
    try:
        yield node
    finally:
        node.stop()


def test_a_wrong_api_key_is_each_clients_own_401(keyed_node: NodeProcess) -> None:
    import openai
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{keyed_node.url}/v1", api_key="wrong",
                      max_retries=0).models.list()
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=keyed_node.url, api_key="wrong", max_retries=0
                            ).messages.create(model="smollm2-135m", max_tokens=4,
                                              messages=[{"role": "user", "content": "Hi"}])
    with pytest.raises(ollama.ResponseError) as raised:
        ollama.Client(host=keyed_node.url, headers={"Authorization": "Bearer wrong"}).list()
    assert raised.value.status_code == 401
    assert httpx.get(f"{keyed_node.url}/healthz").status_code == 200
    models = openai.OpenAI(base_url=f"{keyed_node.url}/v1", api_key="right-key",
                           max_retries=0).models.list()
    assert any(m.id == "smollm2-135m" for m in models)
