from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI, Request

from skulk.api.errors import install_error_handlers
from skulk.api.security import ApiSecurity, SecurityMiddleware, key_accepted, presented_key


def test_keys_come_from_either_header_and_compare_exactly() -> None:
    assert presented_key({"authorization": "Bearer k1"}) == "k1"
    assert presented_key({"x-api-key": "k2"}) == "k2"
    assert presented_key({}) is None
    assert key_accepted(None, frozenset())
    assert key_accepted("k1", frozenset({"k1", "k2"}))
    assert not key_accepted("k", frozenset({"k1"}))
    assert not key_accepted(None, frozenset({"k1"}))


def app_with(security: ApiSecurity) -> httpx.AsyncClient:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/v1/chat/completions")
    @app.post("/v1/messages")
    @app.post("/api/chat")
    async def echo(request: Request) -> dict[str, int]:
        return {"size": len(await request.body())}

    @app.get("/healthz")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    wrapped = SecurityMiddleware(app, security)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=wrapped),
                             base_url="http://test")


@pytest.mark.anyio
async def test_a_missing_key_is_a_401_in_each_dialect() -> None:
    async with app_with(ApiSecurity(api_keys=frozenset({"secret"}))) as client:
        openai = await client.post("/v1/chat/completions", json={})
        assert openai.status_code == 401
        assert openai.json()["error"]["code"] == "invalid_api_key"
        anthropic = await client.post("/v1/messages", json={})
        assert anthropic.json()["error"]["type"] == "authentication_error"
        ollama = await client.post("/api/chat", json={}, headers={"x-api-key": "wrong"})
        assert ollama.status_code == 401 and isinstance(ollama.json()["error"], str)
        assert (await client.get("/healthz")).status_code == 200
        allowed = await client.post("/api/chat", content=b"abc",
                                    headers={"Authorization": "Bearer secret"})
        assert allowed.json() == {"size": 3}


@pytest.mark.anyio
async def test_a_body_over_the_limit_is_a_413_declared_or_streamed() -> None:
    async with app_with(ApiSecurity(max_body_bytes=10)) as client:
        assert (await client.post("/api/chat", content=b"x" * 10)).json() == {"size": 10}
        declared = await client.post("/v1/chat/completions", content=b"x" * 11)
        assert declared.status_code == 413
        assert declared.json()["error"]["code"] == "request_too_large"

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(3):
                yield b"x" * 6

        streamed = await client.post("/v1/messages", content=chunks())
        assert streamed.status_code == 413
        assert streamed.json()["error"]["type"] == "request_too_large"
