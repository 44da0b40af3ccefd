"""The OpenAPI document, completed with the errors every route can answer and the
content types of streams.

FastAPI documents a 422 validation error; Skulk answers bad input with a 400 in the route's
dialect, keeps 422 for a model that cannot be served as asked (a 4xx, which clients do not
retry), and any route may also answer 401 (API key), 404, 413 (body size) or a 5xx while
the cluster cannot serve. This adds those, each with its dialect's error schema.
"""

from typing import Any

from fastapi import FastAPI

from skulk.api.errors import Dialect, dialect_of

_ERROR_SCHEMAS: dict[Dialect, dict[str, Any]] = {
    "openai": {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["message", "type"], "properties": {
            "message": {"type": "string"}, "type": {"type": "string"},
            "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}},
    "anthropic": {"type": "object", "required": ["type", "error"], "properties": {
        "type": {"const": "error"}, "error": {
            "type": "object", "required": ["type", "message"], "properties": {
                "type": {"type": "string"}, "message": {"type": "string"}}}}},
    "ollama": {"type": "object", "required": ["error"],
               "properties": {"error": {"type": "string"}}},
}

_ERRORS = {
    "400": "The request is malformed or asks for something impossible; the message says "
           "what to fix",
    "401": "A valid API key is needed",
    "404": "No such model, instance or request",
    "409": "The request was cancelled",
    "410": "The instance was removed; the message says why",
    "413": "The request body is over the limit",
    "422": "The model cannot be served as asked: no node can hold it, or its instance "
           "failed to start (its weights could not be reached, its runner could not load "
           "it); the message says why. The same request sent again fails the same way",
    "429": "Every instance of the model has its queue full; retry after `Retry-After` "
           "seconds",
    "499": "The client went away before the reply was ready",
    "500": "An internal error",
    "503": "The cluster cannot serve this now (placing, loading, a runner failed, or the "
           "request waited too long in a queue)",
    "504": "The cluster did not answer in time",
}


# Routes that stream when asked, and the content type of their stream.
_STREAMS = {"/v1/chat/completions": "text/event-stream", "/v1/completions": "text/event-stream",
            "/v1/responses": "text/event-stream",
            "/v1/messages": "text/event-stream", "/api/chat": "application/x-ndjson",
            "/api/generate": "application/x-ndjson"}

# OpenAPI 3.1 has a server-sent event stream's `schema` describe one event: its `data` is
# the dialect's JSON chunk as text, `event` names it in the dialects that name events.
_SSE_EVENT_SCHEMA = {"type": "object", "required": ["data"], "properties": {
    "data": {"type": "string", "description": "The event's JSON payload, as text."},
    "event": {"type": "string", "description": "The event's type, where the dialect names "
              "it (Anthropic messages, OpenAI responses)."},
    "id": {"type": "string"}, "retry": {"type": "integer"}}}


def complete_error_responses(document: dict[str, Any]) -> dict[str, Any]:
    for path, item in document.get("paths", {}).items():
        schema = _ERROR_SCHEMAS[dialect_of(path)]
        stream_type = _STREAMS.get(path.removeprefix("/ollama"))
        for operation in item.values():
            responses = operation.setdefault("responses", {})
            if stream_type is not None:
                ok = responses.setdefault("200", {"description": "The reply"})
                ok.setdefault("content", {}).setdefault("application/json", {"schema": {}})
                ok["content"][stream_type] = {"schema": (
                    _SSE_EVENT_SCHEMA if stream_type == "text/event-stream"
                    else {"type": "string"})}
            responses.pop("422", None)
            for status, description in _ERRORS.items():
                responses.setdefault(status, {
                    "description": description,
                    "content": {"application/json": {"schema": schema}}})
    document.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
    document.get("components", {}).get("schemas", {}).pop("ValidationError", None)
    return document


def install_openapi(app: FastAPI) -> None:
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete_error_responses(original())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
