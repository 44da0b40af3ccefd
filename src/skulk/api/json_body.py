"""Request bodies are JSON whatever their `Content-Type` says, as Ollama and llama-server
read them: `curl -d '{...}'` sends `application/x-www-form-urlencoded`, the style of
Ollama's own examples, and some clients send no type at all. Every route's body is JSON,
so a body under any other content type, or none, is read as JSON; one that is not JSON
gets the dialect's "not valid JSON" 400.
"""

from starlette.types import ASGIApp, Receive, Scope, Send

_JSON = b"application/json"
_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _is_json(content_type: bytes) -> bool:
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == _JSON or (media.startswith(b"application/") and media.endswith(b"+json"))


class JsonBodyMiddleware:
    """Relabels a request body of any other content type, or of none, as JSON."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in _WITH_BODY:
            headers: list[tuple[bytes, bytes]] = list(scope["headers"])
            declared = [value for name, value in headers if name.lower() == b"content-type"]
            if not declared or not _is_json(declared[0]):
                kept = [(name, value) for name, value in headers
                        if name.lower() != b"content-type"]
                scope = {**scope, "headers": [*kept, (b"content-type", _JSON)]}
        await self._app(scope, receive, send)
