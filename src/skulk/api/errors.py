"""API errors: one internal `ApiError`, rendered in the dialect of the route it came from.

OpenAI: `{"error": {"message", "type", "param", "code"}}`. Anthropic (`/v1/messages`):
`{"type": "error", "error": {"type", "message"}}`. Ollama (`/api/...`, `/ollama/api/...`):
`{"error": "message"}`. Each official client library turns these into its own exception.
"""

from typing import Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from skulk.shared.partition import Partitioned
from skulk.shared.types.chunks import ErrorChunk, ErrorKind

Dialect = Literal["openai", "anthropic", "ollama"]

# A placement that cannot succeed as asked: no node can hold the model, or its weights
# cannot be reached. Clients do not retry a 4xx.
PLACEMENT_FAILED_STATUS = 422

# (HTTP status, OpenAI error type, code) per internal error kind. A placement that failed
# is 422, not 5xx: the same request sent again seconds later fails the same way, and the
# official clients retry every 5xx (each retry placing the model and fetching its weights
# again); more nodes or fewer models make it succeed, not waiting.
ERROR_KIND_HTTP: dict[ErrorKind, tuple[int, str, str]] = {
    "context_length_exceeded": (400, "invalid_request_error", "context_length_exceeded"),
    "invalid_request": (400, "invalid_request_error", "invalid_request"),
    "model_not_found": (404, "invalid_request_error", "model_not_found"),
    "placement_failed": (PLACEMENT_FAILED_STATUS, "invalid_request_error", "placement_failed"),
    "runner_failed": (503, "server_error", "runner_failed"),
    "timeout": (504, "server_error", "timeout"),
    "cancelled": (409, "invalid_request_error", "cancelled"),
    "internal": (500, "server_error", "internal_error"),
    "partitioned": (503, "server_error", "partitioned"),
    "pipeline_corrupt": (503, "server_error", "pipeline_corrupt"),
    "overloaded": (429, "rate_limit_error", "rate_limit_exceeded"),
}

# Anthropic's error types by HTTP status (https://docs.anthropic.com/en/api/errors).
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error",
                    413: "request_too_large", 429: "rate_limit_error",
                    503: "overloaded_error", 529: "overloaded_error"}


def dialect_of(path: str) -> Dialect:
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith(("/api/", "/ollama/api/")):
        return "ollama"
    return "openai"


class ApiError(Exception):
    """Raised anywhere in a route; rendered in the route's dialect."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.retry_after = retry_after  # seconds, sent as `Retry-After`

    @classmethod
    def from_chunk(cls, chunk: ErrorChunk) -> "ApiError":
        status, type_, code = ERROR_KIND_HTTP[chunk.error_kind]
        return cls(status, chunk.message, type=type_, code=code,
                   retry_after=chunk.retry_after_seconds)

    def body(self, dialect: Dialect = "openai") -> dict[str, object]:
        if dialect == "anthropic":
            fallback = "api_error" if self.status >= 500 else "invalid_request_error"
            return {"type": "error", "error": {
                "type": _ANTHROPIC_TYPES.get(self.status, fallback), "message": self.message}}
        if dialect == "ollama":
            return {"error": self.message}
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}

    def response(self, dialect: Dialect = "openai") -> JSONResponse:
        headers = None if self.retry_after is None else {"Retry-After": str(self.retry_after)}
        return JSONResponse(self.body(dialect), status_code=self.status, headers=headers)


def _validation_error(error: RequestValidationError) -> ApiError:
    first = error.errors()[0] if error.errors() else {}
    if first.get("type") == "json_invalid":
        return ApiError(400, "the request body is not valid JSON: "
                        f"{first.get('ctx', {}).get('error', 'parse error')}", code="invalid_json")
    location = [str(part) for part in first.get("loc", ()) if part != "body"]
    field = ".".join(location) or "body"
    return ApiError(400, f"invalid value for '{field}': {first.get('msg', 'invalid')}",
                    param=field, code="invalid_value")


def invalid_parameters(error: ValidationError) -> ApiError:
    """A request whose values passed the dialect's parsing but not the internal bounds."""
    errors = error.errors()
    if not errors:
        return ApiError(400, "invalid request parameters", code="invalid_value")
    field = ".".join(str(part) for part in errors[0]["loc"]) or "body"
    return ApiError(400, f"invalid value for '{field}': {errors[0]['msg']}",
                    param=field, code="invalid_value")


def install_error_handlers(app: FastAPI) -> None:
    async def on_api_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, ApiError)
        return error.response(dialect_of(request.url.path))

    async def on_validation(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return _validation_error(error).response(dialect_of(request.url.path))

    async def on_http(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, HTTPException)
        type_ = "invalid_request_error" if error.status_code < 500 else "server_error"
        code = {413: "request_too_large", 404: "not_found", 405: "method_not_allowed"}.get(
            error.status_code)
        return ApiError(error.status_code, str(error.detail), type=type_, code=code).response(
            dialect_of(request.url.path))

    async def on_bounds(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, ValidationError)
        return invalid_parameters(error).response(dialect_of(request.url.path))

    async def on_partitioned(request: Request, error: Exception) -> JSONResponse:
        return ApiError(503, str(error), type="server_error", code="partitioned").response(
            dialect_of(request.url.path))

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(Partitioned, on_partitioned)
    app.add_exception_handler(ValidationError, on_bounds)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
