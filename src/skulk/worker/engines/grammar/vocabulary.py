"""A model's tokens as llguidance sees them: the tokenizer its masks are computed over,
each token's bytes (for log probabilities) and what the closing strategy prefers."""

from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path

import llguidance
import numpy as np
import numpy.typing as npt

# Outside a string, what the closing strategy tries first (closing an object or array,
# then the separator before a required key), and the values it prefers to start.
_CLOSERS = (b"}", b"]", b",")
_VALUE_STARTS = (b'"', b"[", b"{")
# A token with no bytes (a special token) is never the shortest way on.
_NO_BYTES = 1 << 20


class Vocabulary:
    """Built on first use (~0.3 s for a 49k vocabulary), then shared by every request."""

    def __init__(self, build: Callable[[], llguidance.LLTokenizer], size: int,
                 eos_token_ids: Iterable[int]) -> None:
        self._build = build
        self.size = size  # the model's logits width, which may exceed the tokenizer's
        self.eos_token_ids = tuple(sorted(eos_token_ids))

    @classmethod
    def of_tokenizer_json(cls, path: Path, size: int,
                          eos_token_ids: Iterable[int]) -> "Vocabulary":
        """A Hugging Face tokenizer.json's vocabulary (an MLX model directory's)."""
        ends = sorted(eos_token_ids)
        return cls(lambda: llguidance.LLTokenizer(path.read_text(), n_vocab=size,
                                                  eos_token=ends), size, ends)

    @cached_property
    def tokenizer(self) -> llguidance.LLTokenizer:
        return self._build()

    def piece(self, token: int) -> bytes:
        """The token's bytes (a special token's are empty)."""
        return self.tokenizer.decode_bytes([token])

    @cached_property
    def byte_lengths(self) -> npt.NDArray[np.int64]:
        lengths = np.array([len(self.piece(t)) for t in range(self.size)], dtype=np.int64)
        lengths[lengths == 0] = _NO_BYTES
        return lengths

    @cached_property
    def closers(self) -> tuple[int, ...]:
        return self._single_tokens(_CLOSERS)

    @cached_property
    def value_starts(self) -> tuple[int, ...]:
        return self._single_tokens(_VALUE_STARTS)

    @cached_property
    def quote(self) -> int | None:
        found = self._single_tokens((b'"',))
        return found[0] if found else None

    @cached_property
    def single_bytes(self) -> npt.NDArray[np.int64]:
        """The tokens of exactly one byte, in id order."""
        return np.flatnonzero(self.byte_lengths == 1)

    @cached_property
    def byte_class(self) -> dict[int, int]:
        """For each one-byte token: 0 lowercase letter, 1 uppercase, 2 digit, -1 other."""
        classes: dict[int, int] = {}
        for token in self.single_bytes:
            [byte] = self.piece(int(token))
            classes[int(token)] = (0 if 0x61 <= byte <= 0x7A else 1 if 0x41 <= byte <= 0x5A
                                   else 2 if 0x30 <= byte <= 0x39 else -1)
        return classes

    def _single_tokens(self, spellings: Iterable[bytes]) -> tuple[int, ...]:
        """The tokens spelling each of `spellings` alone, where one does, in order."""
        found: list[int] = []
        for spelling in spellings:
            spelled = self.tokenizer.tokenize_bytes(spelling)
            if len(spelled) == 1:
                found.append(spelled[0])
        return tuple(found)
