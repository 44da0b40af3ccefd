"""A JSON body is read whatever its Content-Type, on every dialect's routes; a body that
is not JSON gets a 400 in the route's dialect."""

import json

import httpx
import pytest

from skulk.api.routers.instances_test import api_context, serve
from skulk.testing.placement import node

FORM = "application/x-www-form-urlencoded"  # what `curl -d` sends
MESSAGES = [{"role": "user", "content": "Hi"}]
# A body per dialect that names a model nobody has: the 404 that names it shows the body
# was read, without a model to run.
ROUTES: list[tuple[str, dict[str, object]]] = [
    ("/v1/chat/completions", {"model": "nope", "messages": MESSAGES}),
    ("/v1/completions", {"model": "nope", "prompt": "Hi"}),
    ("/v1/responses", {"model": "nope", "input": "Hi"}),
    ("/v1/embeddings", {"model": "nope", "input": "Hi"}),
    ("/v1/messages", {"model": "nope", "max_tokens": 4, "messages": MESSAGES}),
    ("/api/chat", {"model": "nope", "messages": MESSAGES}),
    ("/api/generate", {"model": "nope", "prompt": "Hi"}),
    ("/ollama/api/show", {"model": "nope"}),
]


def message_of(path: str, body: dict[str, object]) -> str:
    """The error message, read from the dialect's own error shape."""
    error = body["error"]
    if path.startswith(("/api/", "/ollama/")):
        assert isinstance(error, str)
        return error
    assert isinstance(error, dict)
    if path == "/v1/messages":
        assert body["type"] == "error"
    return str(error["message"])


@pytest.mark.anyio
@pytest.mark.parametrize("content_type", [FORM, "text/plain", None])
async def test_a_json_body_is_read_whatever_its_content_type(content_type: str | None) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    async with serve(api_context([node("a")])[0]) as client:
        for path, body in ROUTES:
            answer = await client.post(path, content=json.dumps(body), headers=headers)
            assert answer.status_code == 404, (path, answer.text)
            assert "the model 'nope' does not exist" in message_of(path, answer.json()), path
        shown = await client.post("/api/show", content=json.dumps({"model": "smollm2-135m"}),
                                  headers=headers)
        assert shown.status_code == 200 and shown.json()["details"]["family"] == "llama"


@pytest.mark.anyio
async def test_a_body_that_is_not_json_is_a_400_in_the_routes_dialect() -> None:
    async with serve(api_context([node("a")])[0]) as client:
        for path, _ in ROUTES:
            answer = await client.post(path, content=b"model=nope&prompt=Hi",
                                       headers={"Content-Type": FORM})
            assert answer.status_code == 400, (path, answer.text)
            assert "not valid JSON" in message_of(path, answer.json()), path


@pytest.mark.anyio
async def test_other_routes_read_a_json_body_of_any_type_too() -> None:
    async with serve(api_context([node("a")])[0]) as client:
        placed = await client.post("/place_instance", headers={"Content-Type": FORM},
                                   content=json.dumps({"model_id": "smollm2-135m"}))
        assert placed.status_code == 201, placed.text
        wrong: httpx.Response = await client.post(
            "/place_instance", headers={"Content-Type": "application/problem+json"},
            content=json.dumps({"model_id": "nope"}))
        assert wrong.status_code == 404
