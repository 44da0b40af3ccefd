import math

import numpy as np

from skulk.worker.engines.llama_cpp.token_text import TokenText
from skulk.worker.engines.token_logprobs import token_logprob


def test_a_character_split_over_two_tokens_is_sent_whole() -> None:
    text = TokenText([])
    euro = "€".encode()
    assert text.add(1, euro[:2], None) is None
    chunk = text.add(2, euro[2:], None)
    assert chunk is not None and chunk.text == "€" and chunk.token_ids == [1, 2]
    final = text.finish("length", prompt_tokens=5, cached=2)
    assert final.finish_reason == "length" and final.text == ""
    assert final.usage is not None and final.usage.completion_tokens == 2
    assert final.usage.cached_tokens == 2


def test_an_answer_cut_inside_an_emoji_ends_before_it() -> None:
    text = TokenText([])
    wave = "👋".encode()
    first = text.add(1, "你好 ".encode(), None)
    assert first is not None and first.text == "你好 "
    assert text.add(2, wave[:2], None) is None
    assert text.add(3, wave[2:3], None) is None
    final = text.finish("length", prompt_tokens=3, cached=0)  # max_tokens came first
    assert final.text == "" and final.finish_reason == "length"
    assert final.token_ids == [2, 3]  # generated and counted, only their text is dropped
    assert final.usage is not None and final.usage.completion_tokens == 3


def test_a_stop_sequence_is_held_back_then_cut() -> None:
    text = TokenText(["END"])
    first = text.add(1, b"hello E", None)
    assert first is not None and first.text == "hello "
    assert text.add(2, b"N", None) is None
    assert text.add(3, b"D and more", None) is None and text.stopped
    final = text.finish("length", prompt_tokens=1, cached=0)
    assert final.finish_reason == "stop" and final.stop_sequence == "END"
    assert final.text == "" and final.token_ids == []


def test_held_text_is_flushed_at_the_end() -> None:
    text = TokenText(["STOP"])
    assert text.add(1, b"ST", None) is None
    final = text.finish("stop", prompt_tokens=1, cached=0)
    assert final.text == "ST" and final.token_ids == [1]


def test_logprobs_are_normalised_and_the_top_come_likeliest_first() -> None:
    logits = np.array([1.0, 3.0, 2.0, -1.0], dtype=np.float32)
    entry = token_logprob(logits, 2, 2, lambda token: f"t{token}".encode())
    total = math.log(sum(math.exp(x) for x in logits))
    assert math.isclose(entry.logprob, 2.0 - total, rel_tol=1e-5)
    assert [top.token for top in entry.top] == ["t1", "t2"] and entry.token == "t2"
    assert token_logprob(logits, 0, 0, lambda token: b"x").top == []
