"""A real `skulk run` serving the bundled model, driven by the real `openai` client."""

import json
import os
from typing import cast

import httpx
import openai
import pytest
from llama_cpp.llama_types import CreateChatCompletionResponse
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

from skulk.models.catalog import ModelCatalog
from tests.node_process import NodeProcess

PROMPT = "Name three colours of the rainbow."
MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": PROMPT}]


def client(node: NodeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", max_retries=0)


def test_non_streaming_chat(serving_node: NodeProcess) -> None:
    reply = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=24, temperature=0)
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert reply.usage is not None and reply.usage.completion_tokens > 0


def test_streaming_chat_with_usage(serving_node: NodeProcess) -> None:
    stream = client(serving_node).chat.completions.create(
        model="HuggingFaceTB/SmolLM2-135M-Instruct", messages=MESSAGES,
        max_tokens=24, temperature=0, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3
    assert text
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_greedy_output_equals_llama_cpp_python_directly(serving_node: NodeProcess) -> None:
    from llama_cpp import Llama

    catalog = ModelCatalog.builtin(serving_node.data_dir / "models")
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    llama = Llama(model_path=str(catalog.local_path(card, "gguf")), n_ctx=2048,
                  n_threads=os.cpu_count(), verbose=False,
                   flash_attn=True)  # as the engine runs it
    # Not streamed, so the response, not an iterator of chunks (llama_cpp's type has both).
    direct = cast(CreateChatCompletionResponse, llama.create_chat_completion(
        messages=[{"role": "user", "content": PROMPT}], temperature=0, max_tokens=48))
    expected = direct["choices"][0]["message"]["content"]
    served = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=48, temperature=0)
    assert served.choices[0].message.content == expected


def test_unknown_model_is_a_404_in_openai_format(serving_node: NodeProcess) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client(serving_node).chat.completions.create(
            model="no-such-model", messages=MESSAGES)
    assert "no-such-model" in str(raised.value)


def test_malformed_json_is_a_400(serving_node: NodeProcess) -> None:
    response = httpx.post(f"{serving_node.url}/v1/chat/completions", content=b"{not json",
                          headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "error" in response.json()


def test_client_disconnect_cancels_generation(serving_node: NodeProcess) -> None:
    body = {"model": "smollm2-135m", "messages": [{"role": "user", "content":
            "Write a very long story about a fox."}], "max_tokens": 4000, "stream": True,
            "temperature": 0.8, "seed": 1}
    with httpx.stream("POST", f"{serving_node.url}/v1/chat/completions", json=body,
                      timeout=30) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        for _ in range(5):
            next(lines)
    # The task is cancelled and forgotten long before 4000 tokens could be generated.
    serving_node.wait_until(lambda: serving_node.state()["tasks"] == {}, 30.0,
                            "the disconnected request's task to go away")
    reply = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=8)
    assert reply.choices[0].message.content


def test_a_killed_runner_costs_a_pause_and_the_stream_goes_on(
        serving_node: NodeProcess) -> None:
    """One node: nothing else can take the request, so it waits for the runner the worker
    restarts and goes on there, with the text an uninterrupted greedy run gives."""
    prompt = "Count from one to five hundred."
    body = {"model": "smollm2-135m", "messages": [{"role": "user", "content": prompt}],
            "max_tokens": 120, "temperature": 0}  # the runner dies early, most to come
    expected = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=[{"role": "user", "content": prompt}], max_tokens=120,
        temperature=0).choices[0].message
    parts: list[str] = []
    killed_direct: bool | None = None  # whether the relay wrote the stream at the kill
    with httpx.stream("POST", f"{serving_node.url}/v1/chat/completions",
                      json={**body, "stream": True}, timeout=60) as response:
        assert response.status_code == 200
        lines: list[str] = []
        for line in response.iter_lines():
            lines += [line] if line.startswith("data: ") else []
            if not line.startswith("data: {"):
                continue
            event = json.loads(line.removeprefix("data: "))
            assert "error" not in event, event
            if event["choices"] and event["choices"][0]["delta"].get("content"):
                parts.append(event["choices"][0]["delta"]["content"])
                # From the 5th token, once the relay writes this stream (the native
                # path's failover is the one under test; a loaded machine's node may
                # take a few tokens more to hand it over), or at the 40th regardless.
                if killed_direct is None and len(parts) >= 5:
                    direct = serving_node.metric("skulk_native_streams") == 1.0
                    if direct or len(parts) == 40:
                        killed_direct = direct
                        [pid] = serving_node.runner_pids()
                        os.kill(pid, 9)
    assert killed_direct, "the stream was still on the Python path at its runner's death"
    assert lines[-1] == "data: [DONE]" and "".join(parts) == expected.content
    assert 'skulk_failovers_total{reason="runner_failed"} 1.0' in \
        serving_node.get("/metrics").text
    assert len(serving_node.state()["instances"]) == 1  # the same instance, restarted


WEATHER_TOOL: ChatCompletionToolParam = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string",
                                                             "maxLength": 20}},
                   "required": ["city"], "additionalProperties": False}}}


def test_a_tool_call_round_trip(serving_node: NodeProcess) -> None:
    import json
    messages: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "What is the weather in Paris?"}]
    first = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=messages, tools=[WEATHER_TOOL],
        tool_choice="required", max_tokens=60, temperature=0)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.tool_calls
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert isinstance(json.loads(call.function.arguments)["city"], str)  # type: ignore[union-attr]
    messages += [cast(ChatCompletionAssistantMessageParam,
                      choice.message.model_dump(exclude_none=True)),
                 {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 C"}]
    second = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=messages, tools=[WEATHER_TOOL],
        tool_choice="none", max_tokens=30, temperature=0)
    assert second.choices[0].message.content and second.choices[0].finish_reason != "tool_calls"


def test_a_streamed_forced_tool_call_arrives_as_one_delta(serving_node: NodeProcess) -> None:
    stream = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, tools=[WEATHER_TOOL],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=60, temperature=0, stream=True)
    chunks = list(stream)
    calls = [c for chunk in chunks for c in chunk.choices[0].delta.tool_calls or []]
    assert [c.function.name for c in calls] == ["get_weather"]  # type: ignore[union-attr]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_json_schema_response_format_is_enforced(serving_node: NodeProcess) -> None:
    import json
    schema = {"type": "object", "properties": {"colours": {
        "type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
        "required": ["colours"], "additionalProperties": False}
    reply = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=80, temperature=0.7, seed=3,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "colours", "schema": schema}})
    parsed = json.loads(reply.choices[0].message.content or "")
    assert set(parsed) == {"colours"} and all(isinstance(c, str) for c in parsed["colours"])


def test_n_above_one_is_refused_clearly(serving_node: NodeProcess) -> None:
    with pytest.raises(openai.BadRequestError, match="n=1"):
        client(serving_node).chat.completions.create(
            model="smollm2-135m", messages=MESSAGES, n=2)


def test_logprobs_whole_and_streamed(serving_node: NodeProcess) -> None:
    whole = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=8, temperature=0,
        logprobs=True, top_logprobs=2)
    content = whole.choices[0].logprobs.content  # type: ignore[union-attr]
    assert content is not None and len(content) == whole.usage.completion_tokens  # type: ignore[union-attr]
    assert "".join(entry.token for entry in content) == whole.choices[0].message.content
    assert all(len(e.top_logprobs) == 2 and e.logprob <= 0 for e in content)
    stream = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=8, temperature=0,
        logprobs=True, stream=True)
    streamed = [e for c in stream if c.choices and c.choices[0].logprobs
                for e in c.choices[0].logprobs.content or []]
    assert [e.logprob for e in streamed] == [e.logprob for e in content]
    with pytest.raises(openai.BadRequestError, match="top_logprobs"):
        client(serving_node).chat.completions.create(
            model="smollm2-135m", messages=MESSAGES, top_logprobs=2)


def test_responses_announce_their_command_id(serving_node: NodeProcess) -> None:
    raw = client(serving_node).chat.completions.with_raw_response.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=4)
    assert raw.headers["x-skulk-command-id"].startswith("cmd-")


def test_legacy_completion_continues_the_prompt_whole_and_streamed(
        serving_node: NodeProcess) -> None:
    prompt = "The capital of France is"
    whole = client(serving_node).completions.create(
        model="smollm2-135m", prompt=prompt, max_tokens=6, temperature=0)
    assert whole.object == "text_completion" and "Paris" in whole.choices[0].text
    assert whole.usage is not None and whole.usage.prompt_tokens < 10
    parts = list(client(serving_node).completions.create(
        model="smollm2-135m", prompt=prompt, max_tokens=6, temperature=0, stream=True))
    assert "".join(p.choices[0].text for p in parts) == whole.choices[0].text
    echoed = client(serving_node).completions.create(
        model="smollm2-135m", prompt=prompt, max_tokens=6, temperature=0, echo=True)
    assert echoed.choices[0].text == prompt + whole.choices[0].text


def test_responses_whole_and_streamed_through_the_openai_client(
        serving_node: NodeProcess) -> None:
    whole = client(serving_node).responses.create(
        model="smollm2-135m", input="Name three colours of the rainbow.",
        instructions="Be brief.", max_output_tokens=16, temperature=0)
    assert whole.status in ("completed", "incomplete") and whole.output_text
    assert whole.usage is not None and whole.usage.output_tokens > 0
    events = list(client(serving_node).responses.create(
        model="smollm2-135m", input="Name three colours of the rainbow.",
        instructions="Be brief.", max_output_tokens=16, temperature=0, stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] in ("response.completed",
                                                            "response.incomplete")
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == whole.output_text
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_embeddings_through_the_openai_client_rank_similar_texts_closer(
        serving_node: NodeProcess) -> None:
    texts = ["The cat sat on the mat.", "A kitten rested on the rug.",
             "Stock markets fell sharply today."]
    reply = client(serving_node).embeddings.create(model="smollm2-135m", input=texts)
    vectors = [item.embedding for item in reply.data]  # decoded from base64 by the client
    assert [len(v) for v in vectors] == [576] * 3
    assert all(abs(sum(x * x for x in v) - 1.0) < 1e-3 for v in vectors)

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    assert reply.usage.prompt_tokens > 10
    as_floats = client(serving_node).embeddings.create(
        model="smollm2-135m", input=texts[0], encoding_format="float")
    assert max(abs(a - b) for a, b in zip(as_floats.data[0].embedding, vectors[0],
                                          strict=True)) < 1e-5
    with pytest.raises(openai.BadRequestError, match="token-id"):
        client(serving_node).embeddings.create(model="smollm2-135m", input=[[1, 2, 3]])
