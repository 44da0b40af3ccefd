"""The operator dashboard at `/`: the built React app, or a page that says how to build it.

The assets are built from `dashboard-react/` into `DASHBOARD_DIR` (package data, so they
ship with the Python package). Only `/`, `/assets/...` and the view paths below are served
from it, after every API route, so nothing here can shadow the API. A node without the
assets serves the API all the same and says so at `/`.

The dashboard's views are hash routes (`/#/models`). A view typed or bookmarked as a path
(`/models`) gets the same page, which moves the path into the hash; `/cluster` and
`/events` are the API's, so those two views open only as `/#/cluster` and `/#/events`.
"""

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

DASHBOARD_DIR = Path(__file__).parent / "dashboard_dist"
ASSETS_PREFIX = "/assets"
# The views of dashboard-react/src/state/route.ts whose path no API route has.
VIEW_PATHS = ("/charts", "/models", "/instances", "/chat", "/traces")

MISSING_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Skulk</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto;
 padding: 0 1rem; line-height: 1.5">
<h1>Skulk: the API is up, the dashboard is not built</h1>
<p>This node serves the whole HTTP API (see <a href="/docs">/docs</a>), but its
dashboard assets are missing from <code>{directory}</code>.</p>
<p>Build them from the repository root with <code>make dashboard</code>
(or <code>cd dashboard-react &amp;&amp; npm ci &amp;&amp; npm run build</code>),
then reload this page; no restart is needed.</p>
</body></html>
"""


class _AssetFiles(StaticFiles):
    """Static files whose directory may appear after start: until then, every path is a
    404 rather than the 500 Starlette gives for a missing directory."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.directory is not None and not Path(self.directory).is_dir():
            await HTMLResponse("no dashboard assets on this node", status_code=404)(
                scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def install_dashboard(app: FastAPI, directory: Path = DASHBOARD_DIR) -> None:
    """Serve `directory/index.html` at `/` and the view paths, `directory/assets/` at
    `/assets`. Call it after every API route is added: the first route to match wins."""
    assets = directory / "assets"
    # Mounted even while missing, so assets built after the node started are served.
    app.mount(ASSETS_PREFIX, _AssetFiles(directory=assets, check_dir=False), name="assets")

    async def dashboard() -> FileResponse | HTMLResponse:
        index = directory / "index.html"
        if index.is_file():
            # The page names its hashed assets; it must be re-read after every build.
            return FileResponse(index, headers={"Cache-Control": "no-cache"})
        return HTMLResponse(MISSING_PAGE.format(directory=directory))

    for path in ("/", *VIEW_PATHS):
        app.add_api_route(path, dashboard, methods=["GET"], include_in_schema=False,
                          response_model=None)
