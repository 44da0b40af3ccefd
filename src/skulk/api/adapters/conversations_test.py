from skulk.api.adapters.conversations import Generate, to_generation_params, turn_body
from skulk.api.conversations import ConversationStore
from skulk.shared.types.chunks import Usage
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import ChatMessage


def test_a_chat_turn_sends_the_history_and_records_the_reply() -> None:
    session = ConversationStore().create(ModelId("m"), "chat")
    session.messages.append(ChatMessage(role="user", content="Hi"))
    params = to_generation_params(session, Generate(max_tokens=5, stop=["", "."]))
    assert params.session_id == session.session_id and params.prompt_token_ids is None
    assert params.messages == [ChatMessage(role="user", content="Hi")]
    assert params.stop == ["."] and params.max_tokens == 5
    session.record_turn("Hello", [1, 2], Usage(prompt_tokens=3, completion_tokens=2))
    assert session.messages[-1] == ChatMessage(role="assistant", content="Hello")
    assert session.turns == 1 and session.context_tokens() == 5


def test_a_token_turn_sends_the_tokens_and_appends_the_generated_ids() -> None:
    session = ConversationStore().create(ModelId("m"), "tokens")
    session.tokens += [7, 8]
    params = to_generation_params(session, Generate())
    assert params.prompt_token_ids == [7, 8] and params.messages == []
    session.record_turn("ab", [9], None)
    assert session.tokens == [7, 8, 9]
    assert turn_body(session, "ab", [9], "stop", None) == {
        "session_id": session.session_id, "text": "ab", "token_ids": [9],
        "finish_reason": "stop", "usage": None}
