"""Errors in the OpenAI format, `{"error": {"message", "type", "param", "code"}}`, everywhere."""

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from skulk.shared.types.chunks import ErrorChunk, ErrorKind

# (HTTP status, OpenAI error type, code) per internal error kind. Placement failures are
# 503: the request is valid, the cluster lacks room now, and more nodes or fewer models
# would let the same request succeed.
ERROR_KIND_HTTP: dict[ErrorKind, tuple[int, str, str]] = {
    "context_length_exceeded": (400, "invalid_request_error", "context_length_exceeded"),
    "invalid_request": (400, "invalid_request_error", "invalid_request"),
    "model_not_found": (404, "invalid_request_error", "model_not_found"),
    "placement_failed": (503, "server_error", "placement_failed"),
    "runner_failed": (503, "server_error", "runner_failed"),
    "timeout": (504, "server_error", "timeout"),
    "cancelled": (409, "invalid_request_error", "cancelled"),
    "internal": (500, "server_error", "internal_error"),
}


class ApiError(Exception):
    """Raised anywhere in a route; becomes an OpenAI-format error response."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param

    @classmethod
    def from_chunk(cls, chunk: ErrorChunk) -> "ApiError":
        status, type_, code = ERROR_KIND_HTTP[chunk.error_kind]
        return cls(status, chunk.message, type=type_, code=code)

    def body(self) -> dict[str, object]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status)


def _validation_error(error: RequestValidationError) -> ApiError:
    first = error.errors()[0] if error.errors() else {}
    if first.get("type") == "json_invalid":
        return ApiError(400, "the request body is not valid JSON: "
                        f"{first.get('ctx', {}).get('error', 'parse error')}", code="invalid_json")
    location = [str(part) for part in first.get("loc", ()) if part != "body"]
    field = ".".join(location) or "body"
    return ApiError(400, f"invalid value for '{field}': {first.get('msg', 'invalid')}",
                    param=field, code="invalid_value")


def install_error_handlers(app: FastAPI) -> None:
    async def on_api_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, ApiError)
        return error.response()

    async def on_validation(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return _validation_error(error).response()

    async def on_http(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, HTTPException)
        type_ = "invalid_request_error" if error.status_code < 500 else "server_error"
        return ApiError(error.status_code, str(error.detail), type=type_).response()

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
