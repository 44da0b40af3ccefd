"""The dashboard at `/`: served when built, explained when not, never over an API route."""

from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Scope

from skulk.api.app import create_app
from skulk.api.routers.instances_test import api_context
from skulk.api.security import ApiSecurity
from skulk.testing.placement import node


def app_for(dashboard_dir: Path, security: ApiSecurity | None = None) -> FastAPI:
    context, _ = api_context([node("a")])
    return create_app(context, security, dashboard_dir=dashboard_dir)


def client_for(dashboard_dir: Path, security: ApiSecurity | None = None) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app_for(dashboard_dir, security))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def raw_get(app: ASGIApp, path: str) -> tuple[int, bytes]:
    """GET `path` exactly as written: HTTP clients would resolve its `..` first."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                    "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
                    "root_path": "", "query_string": b"", "headers": [],
                    "client": ("127.0.0.1", 1), "server": ("test", 80)}
    await app(scope, receive, send)
    status = next(int(m["status"]) for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def build(directory: Path) -> None:
    (directory / "assets").mkdir(parents=True)
    (directory / "index.html").write_text('<div id="root"></div><script src="/assets/app.js">')
    (directory / "assets" / "app.js").write_text("console.log('skulk')")


@pytest.mark.anyio
async def test_the_built_dashboard_is_served_at_the_root(tmp_path: Path) -> None:
    build(tmp_path)
    async with client_for(tmp_path) as client:
        page = await client.get("/")
        assert page.status_code == 200 and 'id="root"' in page.text
        assert page.headers["cache-control"] == "no-cache"
        script = await client.get("/assets/app.js")
        assert script.status_code == 200 and script.text == "console.log('skulk')"
        assert (await client.get("/assets/nothing.js")).status_code == 404
        # API routes are untouched by the mount.
        assert (await client.get("/healthz")).json()["status"] == "ok"
        assert "nodes" in (await client.get("/cluster")).json()
        assert "/" not in (await client.get("/openapi.json")).json()["paths"]


@pytest.mark.anyio
async def test_without_assets_the_root_says_how_to_build_them(tmp_path: Path) -> None:
    missing = tmp_path / "not-built"
    async with client_for(missing) as client:
        page = await client.get("/")
        assert page.status_code == 200
        assert "dashboard is not built" in page.text and "make dashboard" in page.text
        assert (await client.get("/assets/app.js")).status_code == 404
        assert (await client.get("/state")).status_code == 200
        build(missing)  # built while the node runs: served without a restart
        assert 'id="root"' in (await client.get("/")).text
        assert (await client.get("/assets/app.js")).status_code == 200


@pytest.mark.anyio
async def test_with_keys_only_the_page_and_its_assets_are_open(tmp_path: Path) -> None:
    build(tmp_path)
    security = ApiSecurity(api_keys=frozenset({"secret"}))
    async with client_for(tmp_path, security) as client:
        assert (await client.get("/")).status_code == 200
        assert (await client.get("/assets/app.js")).status_code == 200
        assert (await client.get("/state")).status_code == 401
        keyed = await client.get("/state", headers={"Authorization": "Bearer secret"})
        assert keyed.status_code == 200


@pytest.mark.anyio
async def test_a_path_that_climbs_out_of_the_assets_reaches_no_api_route(
        tmp_path: Path) -> None:
    build(tmp_path)
    app = app_for(tmp_path, ApiSecurity(api_keys=frozenset({"secret"})))
    assert (await raw_get(app, "/state"))[0] == 401
    status, body = await raw_get(app, "/assets/../state")
    assert status == 404 and b"instances" not in body
    status, body = await raw_get(app, "/assets/../../../../etc/passwd")
    assert status == 404 and b"root:" not in body
