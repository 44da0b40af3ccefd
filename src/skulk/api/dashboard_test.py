"""The dashboard at `/` and its view paths: served when built, explained when not, never
over an API route."""

import re
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Scope

from skulk.api.app import create_app
from skulk.api.dashboard import VIEW_PATHS
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


@pytest.mark.anyio
async def test_a_view_opened_by_its_path_gets_the_page_and_the_api_keeps_its_own(
        tmp_path: Path) -> None:
    build(tmp_path)
    async with client_for(tmp_path) as client:
        for path in ("/models", "/instances", "/chat?model=smollm2-135m", "/traces"):
            page = await client.get(path)
            assert page.status_code == 200 and 'id="root"' in page.text, path
        # The API's own paths, and unknown API-ish ones, stay JSON.
        assert "nodes" in (await client.get("/cluster")).json()
        assert "events" in (await client.get("/events")).json()
        for path in ("/models/nope", "/v1/nope", "/chats", "/nope"):
            missing = await client.get(path)
            assert missing.status_code == 404, path
            assert missing.json()["error"]["code"] == "not_found", path
        assert (await client.get("/api/nope")).json() == {"error": "Not Found"}


@pytest.mark.anyio
async def test_with_keys_a_view_path_is_open_and_the_api_beneath_it_is_not(
        tmp_path: Path) -> None:
    build(tmp_path)
    async with client_for(tmp_path, ApiSecurity(api_keys=frozenset({"secret"}))) as client:
        assert (await client.get("/models")).status_code == 200
        assert (await client.get("/models/store")).status_code == 401


@pytest.mark.anyio
async def test_the_view_paths_are_the_dashboards_views_that_no_api_route_has(
        tmp_path: Path) -> None:
    route_ts = Path(__file__).parents[3] / "dashboard-react" / "src" / "state" / "route.ts"
    listed = re.search(r"VIEWS = \[([^\]]*)\]", route_ts.read_text())
    assert listed is not None, f"{route_ts} no longer lists its VIEWS"
    views = {f"/{name}" for name in re.findall(r'"(\w+)"', listed.group(1))}
    async with client_for(tmp_path) as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
    api = {path for path, operations in paths.items() if "get" in operations}
    assert set(VIEW_PATHS) == views - api
