"""A real `skulk run` serving the bundled model, driven by the real `openai` client."""

import os
import time

import httpx
import openai
import pytest

from skulk.models.catalog import ModelCatalog
from tests.node_process import NodeProcess

MESSAGES = [{"role": "user", "content": "Name three colours of the rainbow."}]


def client(node: NodeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", max_retries=0)


def test_non_streaming_chat(serving_node: NodeProcess) -> None:
    reply = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=24, temperature=0)  # type: ignore[arg-type]
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert reply.usage is not None and reply.usage.completion_tokens > 0


def test_streaming_chat_with_usage(serving_node: NodeProcess) -> None:
    stream = client(serving_node).chat.completions.create(
        model="HuggingFaceTB/SmolLM2-135M-Instruct", messages=MESSAGES,  # type: ignore[arg-type]
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
                  n_threads=os.cpu_count(), verbose=False)
    direct = llama.create_chat_completion(messages=MESSAGES, temperature=0, max_tokens=48)  # type: ignore[arg-type]
    expected = direct["choices"][0]["message"]["content"]  # type: ignore[index]
    served = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=48, temperature=0)  # type: ignore[arg-type]
    assert served.choices[0].message.content == expected


def test_unknown_model_is_a_404_in_openai_format(serving_node: NodeProcess) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client(serving_node).chat.completions.create(
            model="no-such-model", messages=MESSAGES)  # type: ignore[arg-type]
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
    serving_node.wait_until(lambda: serving_node.state()["tasks"] == {}, 10.0,
                            "the disconnected request's task to go away")
    reply = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=8)  # type: ignore[arg-type]
    assert reply.choices[0].message.content


def test_killed_runner_ends_the_stream_with_an_error_then_recovers(
        serving_node: NodeProcess) -> None:
    body = {"model": "smollm2-135m", "messages": [{"role": "user", "content":
            "Count from one to five hundred."}], "max_tokens": 3000, "stream": True}
    saw_error = False
    with httpx.stream("POST", f"{serving_node.url}/v1/chat/completions", json=body,
                      timeout=30) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        for _ in range(5):
            next(lines)
        [pid] = serving_node.runner_pids()
        os.kill(pid, 9)
        for line in lines:
            if line.startswith("data: ") and '"error"' in line:
                saw_error = True
    assert saw_error, "the stream must end with an error event, not hang or end cleanly"
    started = time.monotonic()
    serving_node.wait_model_ready(timeout=60)
    reply = client(serving_node).chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=8)  # type: ignore[arg-type]
    assert reply.choices[0].message.content
    assert time.monotonic() - started < 60
