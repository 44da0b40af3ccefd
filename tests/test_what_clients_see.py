"""What clients see from a real node serving the bundled model: whole characters when
`max_tokens` cuts inside one, JSON bodies read whatever their content type, model lists of
what the node can answer, and a wrong name's close matches."""

import json

import httpx
import ollama
import openai
import pytest

from tests.node_process import NodeProcess

# The bundled model answers these greedily with emoji and CJK, whose characters span
# several tokens each (🎉 is three), so small limits cut inside them.
EMOJI = "Reply with only emojis: 🎉🎉🎉"
CJK = "写一首关于猫的诗。"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}  # what `curl -d` sends


def client(node: NodeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", max_retries=0)


def answer(node: NodeProcess, prompt: str, max_tokens: int, stream: bool) -> str:
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "user", "content": prompt}]
    if stream:
        chunks = client(node).chat.completions.create(
            model="smollm2-135m", messages=messages, max_tokens=max_tokens, temperature=0,
            stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    reply = client(node).chat.completions.create(
        model="smollm2-135m", messages=messages, max_tokens=max_tokens, temperature=0)
    return reply.choices[0].message.content or ""


@pytest.mark.parametrize("prompt", [EMOJI, CJK])
def test_max_tokens_inside_a_character_never_sends_a_replacement_character(
        serving_node: NodeProcess, prompt: str) -> None:
    whole = answer(serving_node, prompt, 12, stream=False)
    assert any(ord(c) > 0x2E80 for c in whole), f"no emoji or CJK to cut: {whole!r}"
    texts = []
    for max_tokens in range(1, 7):
        for stream in (False, True):
            text = answer(serving_node, prompt, max_tokens, stream)
            assert "\ufffd" not in text, (max_tokens, stream, text)
            assert whole.startswith(text), (max_tokens, stream, text, whole)
            texts.append(text)
    # Some limits fell inside a character: their text stopped before it.
    assert len(set(texts)) < 6, texts


def test_ollama_cut_inside_a_character_too(serving_node: NodeProcess) -> None:
    local = ollama.Client(host=serving_node.url)
    for num_predict in (1, 2, 4, 5):
        reply = local.chat(model="smollm2-135m", messages=[{"role": "user", "content": EMOJI}],
                           options={"temperature": 0, "num_predict": num_predict})
        assert "\ufffd" not in (reply.message.content or ""), num_predict


def test_a_json_body_sent_as_a_form_is_answered_on_every_dialect(
        serving_node: NodeProcess) -> None:
    url = serving_node.url
    hi = [{"role": "user", "content": "Say hi."}]
    posts: list[tuple[str, dict[str, object]]] = [
        ("/api/generate", {"model": "smollm2-135m", "prompt": "Say hi.", "stream": False,
                           "options": {"num_predict": 4}}),
        ("/api/chat", {"model": "smollm2-135m", "messages": hi, "stream": False,
                       "options": {"num_predict": 4}}),
        ("/v1/chat/completions", {"model": "smollm2-135m", "messages": hi, "max_tokens": 4}),
        ("/v1/completions", {"model": "smollm2-135m", "prompt": "Hi", "max_tokens": 4}),
        ("/v1/messages", {"model": "smollm2-135m", "messages": hi, "max_tokens": 4}),
    ]
    for path, body in posts:
        reply = httpx.post(f"{url}{path}", content=json.dumps(body), headers=FORM, timeout=60)
        assert reply.status_code == 200, (path, reply.text)
    broken = httpx.post(f"{url}/api/generate", content=b"model=smollm2-135m", headers=FORM)
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["error"]
    broken = httpx.post(f"{url}/v1/messages", content=b"{", headers=FORM)
    assert broken.status_code == 400 and broken.json()["type"] == "error"


def test_clients_list_the_model_the_node_can_answer_first(serving_node: NodeProcess) -> None:
    listed = [m.id for m in client(serving_node).models.list()]
    assert listed[0] == "smollm2-135m" and "deepseek-r1-distill-llama-8b" not in listed
    everything = httpx.get(f"{serving_node.url}/v1/models", params={"all": "true"}).json()
    statuses = {m["id"]: m["status"] for m in everything["data"]}
    assert statuses["deepseek-r1-distill-llama-8b"] == "download"
    assert len(statuses) >= 30 and list(statuses)[0] == "smollm2-135m"
    tags = ollama.Client(host=serving_node.url).list().models
    assert "smollm2-135m:latest" in [m.model for m in tags]
    assert "qwen3-8b:latest" not in [m.model for m in tags]


def test_a_wrong_model_name_suggests_the_close_one(serving_node: NodeProcess) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        client(serving_node).chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
    assert "did you mean smollm2-135m?" in missing.value.message
    assert "qwen2.5-72b-instruct" not in missing.value.message
