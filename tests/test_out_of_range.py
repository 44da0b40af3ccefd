"""Values no engine or encoder can take are a 400 in the caller's own dialect, naming the
field, and the node goes on serving: never a 500, never a crashed runner."""

from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest

from tests.node_process import NodeProcess

pytestmark = pytest.mark.integration
MODEL = "smollm2-135m"
HUGE = 2**64
MESSAGES = [{"role": "user", "content": "Hi"}]


def post(node: NodeProcess, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{node.url}{path}", json=body, timeout=60)


@pytest.mark.parametrize("field, value", [
    ("max_tokens", HUGE), ("seed", HUGE), ("seed", -1), ("top_k", HUGE),
    ("max_completion_tokens", HUGE), ("temperature", 1e308)])
def test_openai_chat_refuses_out_of_range_values(serving_node: NodeProcess, field: str,
                                                 value: Any) -> None:
    reply = post(serving_node, "/v1/chat/completions",
                 {"model": MODEL, "messages": MESSAGES, field: value})
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert field.replace("max_completion_tokens", "max_tokens") in error["message"]
    assert error["type"] == "invalid_request_error"


def test_the_openai_client_raises_its_own_bad_request(serving_node: NodeProcess) -> None:
    client = openai.OpenAI(base_url=f"{serving_node.url}/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}],
                                       max_tokens=HUGE)


def test_openai_completions_and_responses_refuse_them(serving_node: NodeProcess) -> None:
    reply = post(serving_node, "/v1/completions", {"model": MODEL, "prompt": "Hi",
                                                   "max_tokens": HUGE})
    assert reply.status_code == 400 and "max_tokens" in reply.json()["error"]["message"]
    reply = post(serving_node, "/v1/responses", {"model": MODEL, "input": "Hi",
                                                 "max_output_tokens": HUGE})
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["type"] == "invalid_request_error"


def test_anthropic_refuses_them_in_its_format(serving_node: NodeProcess) -> None:
    client = anthropic.Anthropic(base_url=serving_node.url, api_key="x", max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
        # Streaming, or the client itself refuses a max_tokens that large before sending.
        client.messages.create(model=MODEL, max_tokens=HUGE, stream=True,
                               messages=[{"role": "user", "content": "Hi"}])
    reply = post(serving_node, "/v1/messages", {"model": MODEL, "max_tokens": 8,
                                                "top_k": HUGE, "messages": MESSAGES})
    assert reply.status_code == 400
    assert reply.json()["type"] == "error" and "top_k" in reply.json()["error"]["message"]


@pytest.mark.parametrize("option", ["num_predict", "seed", "top_k"])
def test_ollama_refuses_them_in_its_format(serving_node: NodeProcess, option: str) -> None:
    reply = post(serving_node, "/api/chat", {"model": MODEL, "messages": MESSAGES,
                                             "stream": False, "options": {option: HUGE}})
    assert reply.status_code == 400, reply.text
    assert set(reply.json()) == {"error"}
    with pytest.raises(ollama.ResponseError) as raised:
        ollama.Client(host=serving_node.url).chat(model=MODEL, messages=MESSAGES,
                                                  options={option: HUGE})
    assert raised.value.status_code == 400


def test_session_token_ids_out_of_range_are_refused(serving_node: NodeProcess) -> None:
    created = post(serving_node, "/v1/sessions", {"model": MODEL, "kind": "tokens"})
    assert created.status_code == 201, created.text
    session = created.json()["session_id"]
    for tokens in ([HUGE], [2**31], [-1]):
        reply = post(serving_node, f"/v1/sessions/{session}/messages", {"tokens": tokens})
        assert reply.status_code == 400, reply.text
    reply = post(serving_node, f"/v1/sessions/{session}/messages", {"tokens": [1, 2, 3]})
    assert reply.status_code == 200
    reply = post(serving_node, f"/v1/sessions/{session}/generate",
                 {"max_tokens": 4, "seed": HUGE})
    assert reply.status_code == 400 and "seed" in reply.json()["error"]["message"]


def test_the_node_serves_on_after_all_of_them(serving_node: NodeProcess) -> None:
    reply = post(serving_node, "/v1/chat/completions",
                 {"model": MODEL, "messages": MESSAGES, "max_tokens": 4})
    assert reply.status_code == 200, reply.text
