"""The closing strategy: the tokens that finish a JSON answer soon from where it stands.

Inside a string: the closing quote when the grammar allows it, else the tokens it forces,
else the shortest run of one-byte tokens after which it does (a pattern such as
^[A-Z]{3}$ or a format such as an e-mail address), found breadth-first over distinct
masks. Outside one: a closing bracket or the separator before a required key, a forced
token, an opening quote or bracket, else the allowed token used least, then shortest.
"""

import llguidance
import numpy as np
import numpy.typing as npt

from skulk.worker.engines.grammar.json_lexer import JsonLexer
from skulk.worker.engines.grammar.vocabulary import Vocabulary

Mask = npt.NDArray[np.bool_]
Uses = npt.NDArray[np.int64]

# How far, and over how many distinct states, the search for a way to close a string looks.
_QUOTE_SEARCH_DEPTH = 12
_QUOTE_SEARCH_WIDTH = 8


def mask_of(matcher: llguidance.LLMatcher, size: int) -> Mask:
    packed = np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8)
    bits: Mask = np.unpackbits(packed, bitorder="little")[:size].view(np.bool_)
    return bits


def closing_path(matcher: llguidance.LLMatcher, lexer: JsonLexer, uses: Uses,
                 vocabulary: Vocabulary, limit: int) -> list[int] | None:
    """The tokens that complete the answer from `matcher` and `lexer` (copies, advanced
    along), or None when they are more than `limit`."""
    path: list[int] = []
    while len(path) <= limit:
        if matcher.is_accepting():
            return path
        run = _next_run(matcher, lexer, uses, vocabulary)
        for token in run:
            uses[token] += 1
            lexer.feed(vocabulary.piece(token))
            if not matcher.consume_token(token):
                raise RuntimeError(f"the closing strategy broke the grammar: "
                                   f"{matcher.get_error()}")
        path += run
    return None


def _allows(matcher: llguidance.LLMatcher, token: int) -> bool:
    """One token checked without computing the whole mask (most steps need no more)."""
    return bool(matcher.validate_tokens([token]) == 1)


def _next_run(matcher: llguidance.LLMatcher, lexer: JsonLexer, uses: Uses,
              vocabulary: Vocabulary) -> list[int]:
    quote = vocabulary.quote
    if lexer.in_string:
        if quote is not None and _allows(matcher, quote):
            return [quote]
        forced = matcher.compute_ff_tokens()
        return forced[:1] if forced else _way_to_quote(matcher, uses, vocabulary)
    for closer in vocabulary.closers:
        if _allows(matcher, closer):
            return [closer]
    forced = matcher.compute_ff_tokens()
    if forced:
        return forced[:1]
    for opener in vocabulary.value_starts:
        if _allows(matcher, opener):
            return [opener]
    candidates = np.flatnonzero(mask_of(matcher, vocabulary.size))
    if len(candidates) == 0:
        raise RuntimeError(f"the grammar allows no token: {matcher.get_error()}")
    order = np.lexsort((candidates, vocabulary.byte_lengths[candidates], uses[candidates]))
    return [int(candidates[order[0]])]


def _way_to_quote(matcher: llguidance.LLMatcher, uses: Uses,
                  vocabulary: Vocabulary) -> list[int]:
    """A shortest run of one-byte tokens after which the open string may close, trying
    the tokens used least first (so digits vary rather than repeat); failing that, one
    allowed token."""
    single = vocabulary.single_bytes
    single = single[np.argsort(uses[single], kind="stable")]
    allowed = mask_of(matcher, vocabulary.size)
    first = [int(t) for t in single if allowed[t]]
    if not first:
        return [int(np.flatnonzero(allowed)[0])]
    frontier: list[tuple[llguidance.LLMatcher, list[int], Mask]] = [(matcher, [], allowed)]
    seen: set[bytes] = {allowed.tobytes()}
    quote = vocabulary.quote
    for _depth in range(_QUOTE_SEARCH_DEPTH):
        next_frontier: list[tuple[llguidance.LLMatcher, list[int], Mask]] = []
        for state, run, state_allowed in frontier:
            for token in _one_per_class(single, state_allowed, vocabulary):
                successor = state.deep_copy()
                if not successor.consume_token(token):
                    continue
                mask = mask_of(successor, vocabulary.size)
                if quote is not None and mask[quote]:
                    return [*run, token]
                key = mask.tobytes()
                if key not in seen:
                    seen.add(key)
                    next_frontier.append((successor, [*run, token], mask))
        frontier = next_frontier[:_QUOTE_SEARCH_WIDTH]
        if not frontier:
            break
    return first[:1]


def _one_per_class(single: npt.NDArray[np.int64], allowed: Mask,
                   vocabulary: Vocabulary) -> list[int]:
    """The allowed one-byte tokens, in `single`'s order, keeping only the first lowercase
    letter, uppercase letter and digit: patterns and formats mostly treat those alike,
    and the search is then a third as wide."""
    kept: list[int] = []
    classes_seen: set[int] = set()
    for token in (int(t) for t in single if allowed[t]):
        kind = vocabulary.byte_class[token]
        if kind >= 0:
            if kind in classes_seen:
                continue
            classes_seen.add(kind)
        kept.append(token)
    return kept
