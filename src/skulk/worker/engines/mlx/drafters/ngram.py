"""Prompt-lookup drafting: no weights, only the context itself.

When the last n committed tokens occurred earlier in the context, propose what followed
their most recent earlier occurrence. Longer suffixes are tried first (a longer match is
a stronger hint); among occurrences of one suffix the most recent wins. A continuation
that runs into the suffix itself keeps copying, so a repeating pattern is extended.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from skulk.shared.types.traces import Span
from skulk.worker.engines.mlx.drafters.protocol import EMPTY_DRAFT, Draft, DrafterName

DEFAULT_MAX_NGRAM = 4
DEFAULT_MIN_NGRAM = 2  # one-token matches are mostly coincidence in prose


def propose_from(context: Sequence[int], start: int, limit: int) -> tuple[int, ...]:
    """`limit` tokens copied from `context[start:]`, reading the copy itself once past the
    end (so a match overlapping the suffix extends the pattern periodically)."""
    out: list[int] = []
    length = len(context)
    for i in range(limit):
        position = start + i
        out.append(context[position] if position < length else out[position - length])
    return tuple(out)


@dataclass
class NGramSession:
    """An incremental index of the context's n-grams: n-gram -> where its latest earlier
    occurrence ends. Extended as the context grows; rebuilt if it ever changes."""

    max_ngram: int = DEFAULT_MAX_NGRAM
    min_ngram: int = DEFAULT_MIN_NGRAM
    _indexed: list[int] = field(default_factory=list)
    _ends: dict[tuple[int, ...], int] = field(default_factory=dict)

    def propose(self, context: Sequence[int], limit: int) -> Draft:
        if limit <= 0 or len(context) < 2:
            return EMPTY_DRAFT
        self._catch_up(context)
        length = len(context)
        for n in range(min(self.max_ngram, length - 1), self.min_ngram - 1, -1):
            end = self._ends.get(tuple(context[length - n:]))
            if end is not None:
                return Draft(propose_from(context, end, limit), kind=n)
        return EMPTY_DRAFT

    def close(self) -> tuple[Span, ...]:
        self._indexed, self._ends = [], {}
        return ()

    def _catch_up(self, context: Sequence[int]) -> None:
        """Index every n-gram that ends before the last token (so something follows it)."""
        known = len(self._indexed)
        if known > len(context) or list(context[:known]) != self._indexed:
            self._indexed, self._ends, known = [], {}, 0
        self._indexed.extend(context[known:])
        # An n-gram ending at `end` (exclusive) is indexed once `end` < len(context); the
        # ones ending at the new positions are added, later occurrences overwrite.
        for end in range(max(known, 1), len(context)):
            for n in range(self.min_ngram, self.max_ngram + 1):
                if end - n >= 0:
                    self._ends[tuple(context[end - n:end])] = end


@dataclass(frozen=True)
class NGramDrafter:
    """The zero-weight drafter every node can run and serve."""

    max_ngram: int = DEFAULT_MAX_NGRAM
    min_ngram: int = DEFAULT_MIN_NGRAM

    @property
    def name(self) -> DrafterName:
        return "ngram"

    def open(self, request_id: str) -> NGramSession:
        return NGramSession(self.max_ngram, self.min_ngram)
