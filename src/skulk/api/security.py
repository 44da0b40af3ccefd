"""Who may call the API and how much they may send: API keys, body size, CORS.

Keys are optional (`--api-key`, or `SKULK_API_KEY`): when set, every route except the
health check needs one, as `Authorization: Bearer <key>` (OpenAI, Ollama clients) or
`x-api-key: <key>` (Anthropic clients). A missing or wrong key gets a 401 in the dialect
of the route. Bodies over the limit get a 413 before the route reads them.
"""

import hmac
from dataclasses import dataclass, field

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skulk.api.dashboard import VIEW_PATHS
from skulk.api.errors import ApiError, dialect_of

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
API_KEY_ENV = "SKULK_API_KEY"
# The dashboard's page and its static files carry no data: the page asks for a key and
# sends it with its API calls, so a browser can open it on a node that wants keys.
OPEN_PATHS = frozenset({"/healthz", "/", *VIEW_PATHS})
OPEN_PREFIXES = ("/assets/",)


def is_open_path(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


@dataclass(frozen=True)
class ApiSecurity:
    api_keys: frozenset[str] = frozenset()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    cors_origins: list[str] = field(default_factory=list)


def presented_key(headers: dict[str, str]) -> str | None:
    authorization = headers.get("authorization", "")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return headers.get("x-api-key")


def key_accepted(presented: str | None, keys: frozenset[str]) -> bool:
    if not keys:
        return True
    return presented is not None and any(
        hmac.compare_digest(presented.encode(), key.encode()) for key in keys)


class SecurityMiddleware:
    """Checks the key, then counts the body as it streams in."""

    def __init__(self, app: ASGIApp, security: ApiSecurity) -> None:
        self._app = app
        self._security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope["headers"]}
        dialect = dialect_of(path)
        if not is_open_path(path) and scope["method"] != "OPTIONS" and not key_accepted(
                presented_key(headers), self._security.api_keys):
            error = ApiError(401, "a valid API key is needed: send it as 'Authorization: "
                             "Bearer <key>' or 'x-api-key: <key>'", code="invalid_api_key")
            await error.response(dialect)(scope, receive, send)
            return
        limit = self._security.max_body_bytes
        too_large = ApiError(413, f"the request body is over {limit} bytes; send less",
                             code="request_too_large")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await too_large.response(dialect)(scope, receive, send)
            return
        received = 0

        async def counting_receive() -> Message:
            # A body sent without a length is counted as it arrives; the route reading
            # it gets an HTTP error, which the app's handler renders in the dialect.
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise HTTPException(413, too_large.message)
            return message

        await self._app(scope, counting_receive, send)
