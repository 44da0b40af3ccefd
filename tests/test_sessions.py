"""Sessions on a real node, through the package's own client (`skulk.client`)."""

import httpx
import pytest

from skulk.client import Client, SessionBusy, SessionClosed, SessionNotFound
from tests.node_process import NodeProcess

QUESTIONS = ["Name a fruit.", "And a vegetable?", "Which one is sweeter?"]


def test_turns_reuse_the_cache_and_match_a_fresh_request_with_the_full_history(
        serving_node: NodeProcess) -> None:
    with Client(serving_node.url) as client, client.create_session(
            "smollm2-135m", system="Answer in a few words.") as session:
        history = [{"role": "system", "content": "Answer in a few words."}]
        for number, question in enumerate(QUESTIONS):
            session.append(messages=[{"role": "user", "content": question}])
            history.append({"role": "user", "content": question})
            # Something else runs between turns: the session's KV must survive it.
            httpx.post(f"{serving_node.url}/v1/chat/completions", timeout=60, json={
                "model": "smollm2-135m", "max_tokens": 3,
                "messages": [{"role": "user", "content": "Unrelated."}]})
            turn = session.generate(max_tokens=16)
            # A new session with the same history gives the same text (it may reuse the
            # first session's cells: a prompt's prefix is reused across requests).
            with client.create_session("smollm2-135m") as fresh:
                fresh.append(messages=history)
                from_scratch = fresh.generate(max_tokens=16)
            assert from_scratch.cached_tokens < from_scratch.prompt_tokens
            assert turn.text == from_scratch.text
            history.append({"role": "assistant", "content": turn.text})
            if number > 0:
                assert turn.cached_tokens > turn.prompt_tokens // 2
        info = session.info()
        assert info.turns == 3 and info.history_length == 7
        assert info.context_tokens > 0 and info.kv_bytes > 0
        assert info.cached_tokens_last_turn == turn.cached_tokens


def test_a_token_session_continues_token_ids_and_streams(serving_node: NodeProcess) -> None:
    with Client(serving_node.url) as client:
        session = client.create_session("smollm2-135m", kind="tokens")
        session.append(tokens=[504, 3575, 282, 4649, 314])  # "The capital of France is"
        turn = session.generate(max_tokens=4)
        assert turn.token_ids and turn.completion_tokens == len(turn.token_ids)
        assert session.info().history_length == 5 + len(turn.token_ids)
        streamed = "".join(session.stream(max_tokens=4))
        assert streamed
        session.close()


def test_session_errors_are_typed(serving_node: NodeProcess) -> None:
    with Client(serving_node.url) as client:
        with pytest.raises(SessionNotFound):
            client.session("sess_missing").info()
        session = client.create_session("smollm2-135m")
        session.close()
        with pytest.raises(SessionClosed):
            session.append(messages=[{"role": "user", "content": "Hi"}])
        busy = client.create_session("smollm2-135m")
        busy.append(messages=[{"role": "user", "content": "Count to fifty."}])
        stream = busy.stream(max_tokens=40)
        next(stream)  # the turn is under way
        with pytest.raises(SessionBusy):
            busy.generate(max_tokens=4)
        list(stream)
        busy.close()
