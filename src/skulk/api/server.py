"""Serving the API app with uvicorn inside a node that owns its signals."""

import contextlib
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI


class _QuietSignalsServer(uvicorn.Server):
    """Uvicorn without its own signal handling: the node owns SIGINT and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_api(app: FastAPI, host: str, port: int) -> None:
    """Serve `app` until cancelled."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    await _QuietSignalsServer(config).serve()
