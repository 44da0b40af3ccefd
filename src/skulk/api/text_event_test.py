import pytest

from skulk.api.adapters.openai_chat import chunk_body
from skulk.api.consume import sse
from skulk.api.text_event import TextEvent

TEXTS = [" fox", "", 'a "quote" and a \\ backslash', "naïve ☃ 😀", "\n\t\r\x00\x1f",
         "\u2028\u2029", "</script>", "x" * 5000]


def render(text: str) -> bytes:
    return sse(chunk_body("chatcmpl-abc123", 1700000000, "smollm2-135m", {"content": text}))


@pytest.mark.parametrize("text", TEXTS)
def test_the_same_bytes_as_rendering_the_whole_body(text: str) -> None:
    assert TextEvent(render)(text) == render(text)


def test_a_render_without_the_text_or_with_it_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        TextEvent(lambda text: b"data: {}\n\n")
    with pytest.raises(ValueError, match="exactly once"):
        TextEvent(lambda text: sse({"a": text, "b": text}))
