import httpx
import pytest
from loguru import logger

from skulk.api.app import create_app
from skulk.api.routers.instances_test import api_context
from skulk.api.security import ApiSecurity
from skulk.testing.placement import node


def client(security: ApiSecurity | None = None) -> tuple[httpx.AsyncClient, list[str]]:
    context, _ = api_context([node("a")])
    stops: list[str] = []
    context.operations.request_stop = lambda: stops.append("stop")
    sink = logger.add(context.operations.logs.sink, level="DEBUG")
    logger.info("loaded a model")
    logger.warning("a peer is slow")
    logger.remove(sink)
    transport = httpx.ASGITransport(app=create_app(context, security))
    return httpx.AsyncClient(transport=transport, base_url="http://test"), stops


@pytest.mark.anyio
async def test_logs_are_filtered_by_level_and_followed_by_number() -> None:
    http, _ = client()
    async with http:
        page = (await http.get("/v1/logs", params={"level": "warning"})).json()
        assert [line["message"] for line in page["lines"]] == ["a peer is slow"]
        after = (await http.get("/v1/logs", params={"after": page["last_seq"]})).json()
        assert after["lines"] == []
        unknown = await http.get("/v1/logs", params={"level": "loud"})
        assert unknown.status_code == 400 and "unknown level" in unknown.json()["error"][
            "message"]


@pytest.mark.anyio
async def test_stop_needs_the_api_key_and_then_asks_the_node_to_stop() -> None:
    http, stops = client(ApiSecurity(api_keys=frozenset({"secret"})))
    async with http:
        assert (await http.post("/v1/node/stop")).status_code == 401
        assert (await http.get("/v1/logs")).status_code == 401
        assert stops == []
        answer = await http.post("/v1/node/stop", headers={"Authorization": "Bearer secret"})
        assert answer.status_code == 202 and answer.json()["status"] == "stopping"
    assert stops == ["stop"]
