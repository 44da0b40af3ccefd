"""The FastAPI app: one router module per resource or dialect, errors in each dialect's
format, behind the API key / body-size check and optional CORS; the dashboard at `/`."""

from pathlib import Path

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from skulk import __version__
from skulk.api.consume import COMMAND_ID_HEADER
from skulk.api.context import ApiContext
from skulk.api.dashboard import DASHBOARD_DIR, install_dashboard
from skulk.api.errors import install_error_handlers
from skulk.api.json_body import JsonBodyMiddleware
from skulk.api.metrics import RequestCounter
from skulk.api.openapi_doc import install_openapi
from skulk.api.routers import (
    anthropic,
    cancel,
    chat,
    cluster,
    completions,
    conversations,
    diagnostics,
    embeddings,
    events,
    history,
    instances,
    metrics,
    models,
    node_control,
    ollama,
    placement_fits,
    prometheus_targets,
    responses,
    state,
    store,
    traces,
    version,
)
from skulk.api.security import ApiSecurity, SecurityMiddleware


def create_app(context: ApiContext, security: ApiSecurity | None = None,
               dashboard_dir: Path = DASHBOARD_DIR) -> FastAPI:
    security = security or ApiSecurity()
    app = FastAPI(title="Skulk", version=__version__, openapi_url="/openapi.json",
                  description="One OpenAI-compatible endpoint for a cluster of your machines.")
    app.state.context = context
    install_error_handlers(app)
    app.add_middleware(JsonBodyMiddleware)  # innermost: any body is read as JSON
    app.add_middleware(SecurityMiddleware, security=security)
    app.add_middleware(RequestCounter, metrics=context.operations.metrics)  # counts refusals too
    if security.cors_origins:  # outermost, so preflights are answered before the key check
        app.add_middleware(CORSMiddleware, allow_origins=security.cors_origins,
                           allow_methods=["*"], allow_headers=["*"],
                           expose_headers=[COMMAND_ID_HEADER])
    dialects = (chat, completions, responses, embeddings, anthropic, ollama, conversations, models)
    operations = (state, cluster, instances, placement_fits, events, cancel, metrics,
                  history, prometheus_targets, diagnostics, traces, store, version, node_control)
    for module in (*dialects, *operations):
        app.include_router(module.router)
    install_dashboard(app, dashboard_dir)  # last: it must not shadow any API route
    install_openapi(app)
    return app
