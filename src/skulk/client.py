"""A small Python client for Skulk's session API, with typed exceptions.

    from skulk.client import Client
    with Client("http://127.0.0.1:52415") as client, client.create_session("smollm2-135m") as s:
        s.append(messages=[{"role": "user", "content": "Hi"}])
        print(s.generate(max_tokens=32).text)
        print(s.info().cached_tokens_last_turn)
"""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:52415"


class SkulkError(Exception):
    """An error answer from the node; `code` says which (see the subclasses)."""

    def __init__(self, status: int, code: str | None, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class AuthenticationError(SkulkError):
    """The node wants a (different) API key."""


class SessionNotFound(SkulkError):
    """No such session on this node (sessions live on the node that created them)."""


class SessionClosed(SkulkError):
    """The session was closed or expired."""


class SessionBusy(SkulkError):
    """The session is generating; one turn at a time."""


_BY_CODE: dict[str | None, type[SkulkError]] = {
    "invalid_api_key": AuthenticationError, "session_not_found": SessionNotFound,
    "session_closed": SessionClosed, "session_busy": SessionBusy}


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    model: str
    kind: str
    turns: int
    history_length: int
    context_tokens: int
    cached_tokens_last_turn: int
    kv_bytes: int
    busy: bool


@dataclass(frozen=True)
class Turn:
    text: str
    token_ids: list[int]
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        error = response.json()["error"]
        code, message = error.get("code"), error.get("message", response.text)
    except (ValueError, KeyError, TypeError, AttributeError):
        code, message = None, response.text
    raise _BY_CODE.get(code, SkulkError)(response.status_code, code, message)


def _turn(body: dict[str, Any]) -> Turn:
    usage = body.get("usage") or {}
    return Turn(body["text"], body["token_ids"], body["finish_reason"],
                usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0),
                usage.get("cached_tokens", 0))


class Session:
    def __init__(self, client: "Client", session_id: str) -> None:
        self._client = client
        self.session_id = session_id

    def append(self, messages: list[dict[str, str]] | None = None,
               tokens: list[int] | None = None) -> SessionInfo:
        return self._client._info(self._client._call(
            "POST", f"/v1/sessions/{self.session_id}/messages",
            {"messages": messages or [], "tokens": tokens or []}))

    def generate(self, **options: Any) -> Turn:
        """The next turn, whole (options: max_tokens, temperature, top_p, seed, stop...)."""
        return _turn(self._client._call("POST", f"/v1/sessions/{self.session_id}/generate",
                                        {**options, "stream": False}))

    def stream(self, **options: Any) -> Iterator[str]:
        """The next turn's text as it is generated."""
        with self._client._http.stream(
                "POST", f"/v1/sessions/{self.session_id}/generate",
                json={**options, "stream": True}) as response:
            if response.status_code >= 400:
                response.read()
                _raise_for(response)
            for line in response.iter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                if "error" in event:
                    error = event["error"]
                    raise _BY_CODE.get(error.get("code"), SkulkError)(
                        500, error.get("code"), error.get("message", ""))
                if event.get("text"):
                    yield event["text"]

    def info(self) -> SessionInfo:
        return self._client._info(self._client._call("GET", f"/v1/sessions/{self.session_id}"))

    def close(self) -> None:
        self._client._call("DELETE", f"/v1/sessions/{self.session_id}")

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        """Close the session. Leaving on an error, that error is the one raised: a turn
        that failed mid-stream may still be running on the node, whose refusal to close a
        busy session (409) would otherwise hide why (the session then expires idle)."""
        try:
            self.close()
        except SessionClosed:
            pass
        except SkulkError:
            if kind is None:
                raise


class Client:
    def __init__(self, base_url: str = DEFAULT_URL, api_key: str | None = None,
                 timeout: float = 600.0, transport: httpx.BaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, transport=transport,
                                  timeout=httpx.Timeout(timeout, connect=5.0))

    def create_session(self, model: str, *, kind: str = "chat",
                       system: str | None = None) -> Session:
        body: dict[str, Any] = {"model": model, "kind": kind}
        if system is not None:
            body["system"] = system
        return Session(self, self._call("POST", "/v1/sessions", body)["session_id"])

    def session(self, session_id: str) -> Session:
        return Session(self, session_id)

    def _call(self, method: str, path: str, body: object = None) -> dict[str, Any]:
        response = self._http.request(method, path, json=body)
        _raise_for(response)
        result: dict[str, Any] = response.json()
        return result

    @staticmethod
    def _info(body: dict[str, Any]) -> SessionInfo:
        return SessionInfo(**{k: body[k] for k in SessionInfo.__dataclass_fields__})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
