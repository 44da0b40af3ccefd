"""What one node may read from another's API: a short list of read-only paths, answered
over the cluster transport (mutual TLS, signed replies), never over HTTP.

So cluster diagnostics and traces work whatever address a peer's API listens on
(loopback by default), and a user's API key never leaves the node that took the request.
"""

import asyncio
import concurrent.futures
import json
import math
from collections.abc import Callable

from skulk.api.context import ApiContext
from skulk.api.history.cluster import NODE_PATH
from skulk.api.tracing import chrome_trace
from skulk.shared.types.ids import CommandId

PEER_READ_SERVICE = "api_read"
ANSWER_TIMEOUT_SECONDS = 5.0
MAX_PATH_LENGTH = 512


def read_locally(context: ApiContext, path: str,
                 node_diagnostics: Callable[[ApiContext], dict[str, object]]
                 ) -> tuple[int, object]:
    """(HTTP-like status, JSON body) of one peer-readable path on this node."""
    if path == "/v1/diagnostics/node":
        return 200, node_diagnostics(context)
    if path == NODE_PATH or path.startswith(f"{NODE_PATH}?since="):
        since = _since(path)
        if since is None:
            return 400, {"error": "since must be a number of seconds"}
        return 200, context.operations.history.own.answer(since)
    if path == "/v1/traces":
        return 200, {"node_id": context.cluster.node_id,
                     "traces": [trace.summary() for trace in context.requests.traces.all()]}
    if path.startswith("/v1/traces/") and path.count("/") == 3:
        trace = context.requests.traces.get(CommandId(path.rsplit("/", 1)[1]))
        if trace is None:
            return 404, {"error": "no such trace here"}
        return 200, chrome_trace(trace)
    return 403, {"error": f"{path} is not readable by peers"}


def _since(path: str) -> float | None:
    _, _, value = path.partition("?since=")
    try:
        since = float(value) if value else 0.0
    except ValueError:
        return None
    return since if math.isfinite(since) else None


def peer_read_handler(context: ApiContext, loop: asyncio.AbstractEventLoop,
                      node_diagnostics: Callable[[ApiContext], dict[str, object]]
                      ) -> Callable[[bytes], bytes | None]:
    """The query handler: runs the read on the node's event loop (the API's data is only
    touched there), whichever thread the transport calls it on."""

    def handle(payload: bytes) -> bytes | None:
        if len(payload) > MAX_PATH_LENGTH:
            return None
        path = payload.decode(errors="replace")

        def read() -> bytes:
            status, body = read_locally(context, path, node_diagnostics)
            return json.dumps({"status": status, "body": body}).encode()

        if _running_loop() is loop:
            return read()
        result: concurrent.futures.Future[bytes] = concurrent.futures.Future()

        def run() -> None:
            try:
                result.set_result(read())
            except Exception as error:  # noqa: BLE001  (handed to the waiting thread)
                result.set_exception(error)

        loop.call_soon_threadsafe(run)
        return result.result(timeout=ANSWER_TIMEOUT_SECONDS)

    return handle


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
