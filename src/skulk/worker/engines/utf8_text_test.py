"""Token bytes become text without a split character, whatever the token boundaries."""

from hypothesis import given
from hypothesis import strategies as st

from skulk.worker.engines.utf8_text import REPLACEMENT, Utf8Pieces, without_incomplete_tail

EMOJI_AND_CJK = "Hi 👋🏽 你好, 世界! 🎉 日本語 👨‍👩‍👧"


def pieces_of(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[start:end] for start, end in zip(bounds, bounds[1:], strict=False)]


def decoded(pieces: list[bytes]) -> str:
    utf8 = Utf8Pieces()
    text = "".join(utf8.add(piece) for piece in pieces)
    utf8.end()
    return text


def test_emoji_and_cjk_one_byte_a_token_come_out_whole() -> None:
    data = EMOJI_AND_CJK.encode()
    utf8 = Utf8Pieces()
    out = [utf8.add(data[i:i + 1]) for i in range(len(data))]
    assert "".join(out) == EMOJI_AND_CJK
    # Each character appears at once when its last byte arrives, never in parts.
    assert all(REPLACEMENT not in text for text in out)
    assert out[:4] == ["H", "i", " ", ""] and out[6] == "👋"


def test_an_answer_cut_inside_a_character_drops_it() -> None:
    for cut in range(1, 3):  # one or two of its three bytes
        utf8 = Utf8Pieces()
        text = utf8.add("ok 你".encode()[:3 + cut])
        utf8.end()
        assert text == "ok "
    assert decoded(["🎉".encode()[:3]]) == ""


def test_the_decoder_starts_clean_after_the_end() -> None:
    utf8 = Utf8Pieces()
    assert utf8.add("世".encode()[:2]) == ""
    utf8.end()
    assert utf8.add("界".encode()) == "界"


def test_bytes_that_can_never_be_utf8_are_still_replaced() -> None:
    assert decoded([b"a\xffb"]) == f"a{REPLACEMENT}b"
    assert decoded([b"\xe4\xbd", b"A"]) == f"{REPLACEMENT}A"  # a character broken off


@given(st.text(), st.lists(st.integers(min_value=0)))
def test_any_split_gives_the_text_back(text: str, cuts: list[int]) -> None:
    assert decoded(pieces_of(text.encode(), cuts)) == text


@given(st.text(min_size=1), st.integers(min_value=0), st.lists(st.integers(min_value=0)))
def test_any_cut_gives_the_complete_characters_before_it(
        text: str, cut: int, splits: list[int]) -> None:
    data = text.encode()
    prefix = data[:cut % (len(data) + 1)]
    assert decoded(pieces_of(prefix, splits)) == prefix.decode("utf-8", errors="ignore")


def test_a_trailing_replacement_from_a_final_decode_is_dropped() -> None:
    assert without_incomplete_tail(f"ok 你{REPLACEMENT}") == "ok 你"
    assert without_incomplete_tail(f"a{REPLACEMENT}b") == f"a{REPLACEMENT}b"
    assert without_incomplete_tail("") == ""
