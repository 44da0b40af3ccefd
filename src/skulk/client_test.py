"""The session client's context manager, against canned node answers (the real node's
sessions are tested in tests/test_sessions.py)."""

import httpx
import pytest

from skulk.client import Client, SessionBusy, SkulkError

BUSY: dict[str, object] = {"error": {"code": "session_busy",
                                      "message": "session 's1' is generating"}}


def client_answering(delete_status: int, delete_body: dict[str, object]) -> Client:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path == "/v1/sessions":
            return httpx.Response(200, json={"session_id": "s1"})
        if request.method == "POST":  # a turn that fails mid-way
            return httpx.Response(500, json={"error": {"code": "internal",
                                                       "message": "the runner died"}})
        return httpx.Response(delete_status, json=delete_body)

    return Client("http://node", transport=httpx.MockTransport(answer))


def test_leaving_on_an_error_raises_that_error_not_the_refused_close() -> None:
    client = client_answering(409, BUSY)
    with pytest.raises(SkulkError) as raised, client.create_session("m") as session:
        session.generate(max_tokens=4)
    assert raised.value.code == "internal" and "runner died" in raised.value.message


def test_a_refused_close_on_a_clean_exit_is_raised() -> None:
    client = client_answering(409, BUSY)
    with pytest.raises(SessionBusy), client.create_session("m"):
        pass


def test_a_session_already_closed_is_fine_to_leave() -> None:
    client = client_answering(410, {"error": {"code": "session_closed", "message": "gone"}})
    with client.create_session("m"):
        pass
