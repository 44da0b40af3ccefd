import pytest

from skulk.api.conversations import ConversationStore
from skulk.api.errors import ApiError
from skulk.shared.types.ids import ConversationId, ModelId

MODEL = ModelId("m")


def code_of(raised: pytest.ExceptionInfo[ApiError]) -> tuple[int, str | None]:
    return raised.value.status, raised.value.code


def test_unknown_closed_and_busy_sessions_are_told_apart() -> None:
    store = ConversationStore()
    session = store.create(MODEL, "chat")
    assert store.get(session.session_id) is session
    with pytest.raises(ApiError) as unknown:
        store.get(ConversationId("sess_nope"))
    assert code_of(unknown) == (404, "session_not_found")
    session.busy = True
    with pytest.raises(ApiError) as busy:
        store.close(session.session_id)
    assert code_of(busy) == (409, "session_busy")
    session.busy = False
    store.close(session.session_id)
    with pytest.raises(ApiError) as closed:
        store.get(session.session_id)
    assert code_of(closed) == (410, "session_closed")


def test_idle_sessions_expire_and_capacity_is_bounded() -> None:
    now = [0.0]
    store = ConversationStore(capacity=2, idle_ttl=10.0, clock=lambda: now[0])
    first = store.create(MODEL, "chat")
    store.create(MODEL, "tokens")
    with pytest.raises(ApiError) as full:
        store.create(MODEL, "chat")
    assert code_of(full) == (429, "too_many_sessions")
    now[0] = 11.0
    with pytest.raises(ApiError) as expired:
        store.get(first.session_id)
    assert code_of(expired) == (410, "session_closed") and "idle" in expired.value.message
    store.create(MODEL, "chat")
