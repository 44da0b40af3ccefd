"""Token bytes to text, never a character split: a multi-byte character whose bytes come
in several tokens waits for its last byte, and one still incomplete when the answer ends
(cut by `max_tokens`, or the model stopped mid-character) is dropped, as llama-server
drops it, rather than sent as U+FFFD."""

import codecs

REPLACEMENT = "\ufffd"


class Utf8Pieces:
    """Feed one request's token pieces (bytes) in order; get back the text they complete."""

    def __init__(self) -> None:
        # "replace" only for bytes that can never be UTF-8; an incomplete tail is held.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def add(self, piece: bytes) -> str:
        """The text `piece` completes (empty while a character is incomplete)."""
        return self._decoder.decode(piece)

    def end(self) -> None:
        """The answer ended: an incomplete character left is dropped, never replaced."""
        self._decoder.reset()


def without_incomplete_tail(text: str) -> str:
    """The last text of a detokenizer that decodes what it held back with replacement at
    the end (mlx-lm's do): its trailing U+FFFD is the incomplete character, dropped.

    mlx-lm's streaming detokenizers hold back any text that ends in U+FFFD until the next
    token, so a trailing U+FFFD reaches the end only as an incomplete tail (or as a model
    that wrote U+FFFD itself as its very last character, which this drops too)."""
    return text.rstrip(REPLACEMENT)
