"""The forced-tools checks of an MLX instance of the bundled model, whole or split
(tests/test_mlx_cluster.py by the whole model and by layers, tests/test_mlx_heads_cluster.py
by heads): two forced tool calls, a JSON-schema answer, Ollama's `format`, an Anthropic
tool_use turn, greedy log probabilities and embeddings, sent at once."""

import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import ollama
import openai
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
)
from openai.types.shared_params import ResponseFormatJSONSchema

from skulk.testing.function_schemas import function_schemas, validate_answer
from skulk.worker.engines.mlx import mlx_api
from tests.node_process import NodeProcess
from tests.speculative_support import import_models
from tests.test_dialects import anthropic_tool_use_turn

EMBEDDED = ["The capital of France is Paris.", "Rivers run to the sea."]


def whole_model_embeddings(mlx_models: Path) -> list[list[float]]:
    """The vectors the whole model gives in this process (the nodes' copy of it)."""
    model_dir = import_models(mlx_models)[0]
    tokenizer = mlx_api.load_tokenizer(model_dir)
    model = mlx_api.load_model(model_dir)
    vectors = [model.mean_pooled(tokenizer.encode(text, add_special_tokens=True))
               for text in EMBEDDED]
    assert all(vector is not None for vector in vectors)
    return [vector for vector in vectors if vector is not None]


def forced_tools_json_schemas_and_ollama_format(
        api: NodeProcess, shape: str, whole_embeddings: list[list[float]]) -> None:
    """Every check through the instance `api` serves now; `shape` names it in failures."""
    schemas = function_schemas()
    # One failed check waits for the others to end; by heads on a loaded 2-core machine
    # every token is 60 all-reduces among three starved processes (one answer took over
    # 180 s in a fresh-clone run beside other tests).
    client = openai.OpenAI(base_url=f"{api.url}/v1", api_key="unused", max_retries=0,
                           timeout=420)
    ask: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "What is the weather in Paris?"}]
    tools: list[ChatCompletionFunctionToolParam] = [
        {"type": "function", "function": {"name": name, "parameters": schemas[name],
                                          "description": f"{name} with its arguments"}}
        for name in ("get_weather", "book_flight")]
    choices: list[ChatCompletionToolChoiceOptionParam] = [
        "required", {"type": "function", "function": {"name": "book_flight"}}]

    def forced_call(choice: ChatCompletionToolChoiceOptionParam) -> None:
        reply = client.chat.completions.create(
            model="smollm2-135m", messages=ask, tools=tools, tool_choice=choice,
            max_tokens=64, temperature=0)
        [call] = reply.choices[0].message.tool_calls or []
        assert call.type == "function" and call.function.name in schemas
        validate_answer(schemas[call.function.name], call.function.arguments)

    def json_schema_answer() -> None:
        answer = client.chat.completions.create(
            model="smollm2-135m", messages=ask, max_tokens=64, temperature=0,
            response_format=ResponseFormatJSONSchema(type="json_schema", json_schema={
                "name": "contact", "schema": schemas["update_contact"]}))
        validate_answer(schemas["update_contact"], answer.choices[0].message.content or "")

    def ollama_format() -> None:
        chat = ollama.Client(host=api.url).chat(
            model="smollm2-135m", messages=ask, format=schemas["set_thermostat"],
            options={"temperature": 0, "num_predict": 64})
        validate_answer(schemas["set_thermostat"], chat.message.content or "")

    def embeddings_match_the_whole_model() -> None:
        embedded = client.embeddings.create(model="smollm2-135m", input=EMBEDDED)
        got = np.array([item.embedding for item in embedded.data])
        assert np.allclose(got, np.array(whole_embeddings), atol=2e-4), shape

    # Sent at once, as independent clients would: the engine decodes them in one batch
    # (one after another they cost a split's per-token hops or all-reduces each).
    checks: list[Callable[[], None]] = [
        *(functools.partial(forced_call, choice) for choice in choices),
        json_schema_answer, ollama_format, functools.partial(anthropic_tool_use_turn, api),
        functools.partial(_greedy_logprobs_are_the_likeliest_tokens, client, ask),
        embeddings_match_the_whole_model]
    with ThreadPoolExecutor(max_workers=len(checks)) as pool:
        for running in [pool.submit(check) for check in checks]:
            running.result()  # each check's own assertion error, if it failed


def _greedy_logprobs_are_the_likeliest_tokens(client: openai.OpenAI,
                                              ask: list[ChatCompletionMessageParam]) -> None:
    """Whole, by heads (rank 0 decides) or by layers (the last rank decides and carries
    them back): a greedy token is its step's likeliest, and the entries spell the text."""
    scored = client.chat.completions.create(
        model="smollm2-135m", messages=ask, max_tokens=4, temperature=0, logprobs=True,
        top_logprobs=2)
    choice = scored.choices[0]
    entries = choice.logprobs.content if choice.logprobs is not None else None
    assert entries is not None and len(entries) == 4
    assert "".join(e.token for e in entries) == choice.message.content
    for entry in entries:
        assert len(entry.top_logprobs) == 2 and entry.logprob <= 0
        best = entry.top_logprobs[0]
        assert best.token == entry.token and abs(best.logprob - entry.logprob) < 1e-4
        assert entry.top_logprobs[1].logprob <= best.logprob
