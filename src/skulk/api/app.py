"""The FastAPI app: one router module per resource, errors in the OpenAI format."""

from fastapi import FastAPI

from skulk import __version__
from skulk.api.context import ApiContext
from skulk.api.errors import install_error_handlers
from skulk.api.routers import cancel, chat, cluster, instances, models, state


def create_app(context: ApiContext) -> FastAPI:
    app = FastAPI(title="Skulk", version=__version__, openapi_url="/api/openapi.json",
                  description="One OpenAI-compatible endpoint for a cluster of your machines.")
    app.state.context = context
    install_error_handlers(app)
    for module in (chat, models, state, cluster, instances, cancel):
        app.include_router(module.router)
    return app
