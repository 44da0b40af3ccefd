"""One request's grammar as it decodes: which tokens may come next, and closing in time.

The matcher follows every token the request commits (the tokens of a failed-over stream
first, so a constrained answer resumes mid-way like any other). `allowed` is the mask of
the next step; `allowed_along` the masks a drafted continuation would meet, for judging
drafts against the same masks plain decoding would apply.

A model left to itself may not finish a JSON value within `max_tokens` (a random one
almost never closes a string). Within the last `CLOSING_WINDOW` tokens the constraint
works out, for each token the model chooses, how many tokens the closing strategy would
need after it; when they would not fit, it decides that token and every one after
itself, along the path it measured: inside a string the shortest way to a closing quote,
outside one a closer, a forced token, an opening quote or bracket, else the allowed token
used least, then shortest. The answer is then complete, valid JSON however the budget
falls (unless the grammar cannot close within `max_tokens` at all).
"""

from collections.abc import Sequence

import llguidance
import numpy as np
import numpy.typing as npt

from skulk.worker.engines.grammar.compile import GrammarRefused
from skulk.worker.engines.grammar.json_lexer import JsonLexer
from skulk.worker.engines.grammar.vocabulary import Vocabulary

CLOSING_WINDOW = 96
# How far, and over how many distinct states, the search for a way to close a string
# looks (a pattern such as ^[A-Z]{3}$ or a format such as an e-mail address).
_QUOTE_SEARCH_DEPTH = 12
_QUOTE_SEARCH_WIDTH = 8

Mask = npt.NDArray[np.bool_]


class Constraint:
    def __init__(self, vocabulary: Vocabulary, grammar: str,
                 already: Sequence[int] = ()) -> None:
        self._vocabulary = vocabulary
        self._matcher = llguidance.LLMatcher(vocabulary.tokenizer, grammar)
        if self._matcher.is_error():
            raise GrammarRefused(f"the grammar cannot be enforced: {self._matcher.get_error()}")
        if already and not self._matcher.consume_tokens(list(already)):
            raise GrammarRefused("the tokens already generated do not follow the grammar")
        self._lexer = JsonLexer()
        for token in already:
            self._lexer.feed(vocabulary.piece(token))
        self._closing = False
        self._uses = np.zeros(vocabulary.size, dtype=np.int64)  # closing tokens so far

    @property
    def closing(self) -> bool:
        """Whether the constraint now decides every token itself."""
        return self._closing

    @property
    def done(self) -> bool:
        """The grammar is complete: only an end-of-generation token may follow."""
        return self._matcher.is_stopped()

    def allowed(self) -> Mask:
        """The tokens the grammar allows next, as a boolean row over the logits."""
        return _mask_of(self._matcher, self._vocabulary.size)

    def allowed_along(self, drafts: Sequence[int]) -> list[Mask]:
        """The masks at each position of [next, drafts...]: len(drafts) + 1 of them, the
        i-th after drafts[:i]. Every draft must be allowed (see `allowed_prefix`)."""
        masks = [self.allowed()]
        for token in drafts:
            if not self._matcher.consume_token(token):
                raise RuntimeError(f"draft token {token} is not allowed by the grammar")
            masks.append(self.allowed())
        if drafts:
            self._matcher.rollback(len(drafts))
        return masks

    def allowed_prefix(self, drafts: Sequence[int]) -> int:
        """How many leading drafts the grammar allows."""
        return self._matcher.validate_tokens(list(drafts)) if drafts else 0

    def forced(self) -> int | None:
        """The token the closing strategy decides, once it decides them all."""
        if not self._closing:
            return None
        return _closing_token(self._matcher, self._lexer, self._uses, self._vocabulary)

    def vetted(self, token: int, remaining: int) -> int:
        """`token`, the model's choice, if the answer can still close in time after it;
        else the closing strategy's token, from here on. `remaining`: the tokens the
        request may still generate, this one included."""
        if self._closing or remaining > CLOSING_WINDOW or token in self._vocabulary.eos_token_ids:
            return token
        matcher, lexer = self._matcher.deep_copy(), self._lexer.copy()
        lexer.feed(self._vocabulary.piece(token))
        if matcher.consume_token(token) and _closing_length(
                matcher, lexer, self._uses.copy(), self._vocabulary,
                limit=remaining - 1) <= remaining - 1:
            return token
        self._closing = True
        return _closing_token(self._matcher, self._lexer, self._uses, self._vocabulary)

    def advance(self, tokens: Sequence[int]) -> None:
        """Commit tokens the request produced (an end-of-generation token ends it)."""
        for token in tokens:
            if token in self._vocabulary.eos_token_ids:
                return
            if self._closing:
                self._uses[token] += 1
            self._lexer.feed(self._vocabulary.piece(token))
            if not self._matcher.consume_token(token):
                raise RuntimeError(f"token {token} broke the grammar: "
                                   f"{self._matcher.get_error()}")


def _mask_of(matcher: llguidance.LLMatcher, size: int) -> Mask:
    packed = np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8)
    bits: Mask = np.unpackbits(packed, bitorder="little")[:size].astype(np.bool_)
    return bits


def _closing_token(matcher: llguidance.LLMatcher, lexer: JsonLexer,
                   uses: npt.NDArray[np.int64], vocabulary: Vocabulary) -> int:
    allowed = _mask_of(matcher, vocabulary.size)
    for eos in vocabulary.eos_token_ids:
        if allowed[eos]:
            return eos
    quote, closers = vocabulary.quote, vocabulary.closers
    if lexer.in_string:
        if quote is not None and allowed[quote]:
            return quote
        forced = matcher.compute_ff_tokens()
        return forced[0] if forced else _way_to_quote(matcher, allowed, uses, vocabulary)
    for closer in closers:
        if allowed[closer]:
            return closer
    forced = matcher.compute_ff_tokens()
    if forced:
        return forced[0]
    for opener in vocabulary.value_starts:
        if allowed[opener]:
            return opener
    candidates = np.flatnonzero(allowed)
    if len(candidates) == 0:
        raise RuntimeError(f"the grammar allows no token: {matcher.get_error()}")
    order = np.lexsort((candidates, vocabulary.byte_lengths[candidates], uses[candidates]))
    return int(candidates[order[0]])


def _way_to_quote(matcher: llguidance.LLMatcher, allowed: Mask,
                  uses: npt.NDArray[np.int64], vocabulary: Vocabulary) -> int:
    """The first token of a shortest run of one-byte tokens after which the open string
    may close (a pattern or format), found breadth-first over distinct masks, trying the
    tokens used least first (so digits vary rather than repeat)."""
    single = vocabulary.single_bytes
    single = single[np.argsort(uses[single], kind="stable")]
    first_choices = [int(t) for t in single if allowed[t]]
    if not first_choices:
        return int(np.flatnonzero(allowed)[0])
    frontier: list[tuple[llguidance.LLMatcher, int]] = [(matcher, -1)]
    seen: set[bytes] = {allowed.tobytes()}
    quote = vocabulary.quote
    for _depth in range(_QUOTE_SEARCH_DEPTH):
        next_frontier: list[tuple[llguidance.LLMatcher, int]] = []
        for state, first in frontier:
            state_allowed = _mask_of(state, vocabulary.size)
            for token in (int(t) for t in single if state_allowed[t]):
                successor = state.deep_copy()
                if not successor.consume_token(token):
                    continue
                mask = _mask_of(successor, vocabulary.size)
                origin = token if first < 0 else first
                if quote is not None and mask[quote]:
                    return origin
                key = mask.tobytes()
                if key not in seen:
                    seen.add(key)
                    next_frontier.append((successor, origin))
        frontier = next_frontier[:_QUOTE_SEARCH_WIDTH]
        if not frontier:
            break
    return first_choices[0]


def _closing_length(matcher: llguidance.LLMatcher, lexer: JsonLexer,
                    uses: npt.NDArray[np.int64], vocabulary: Vocabulary, limit: int) -> int:
    """Tokens the closing strategy takes to finish from `matcher` and `lexer` (copies),
    at most `limit` + 1 (more is not worth counting)."""
    for taken in range(limit + 1):
        token = _closing_token(matcher, lexer, uses, vocabulary)
        if token in vocabulary.eos_token_ids:
            return taken
        uses[token] += 1
        lexer.feed(vocabulary.piece(token))
        if not matcher.consume_token(token):
            raise RuntimeError(f"the closing strategy broke the grammar: {matcher.get_error()}")
    return limit + 1
