"""One request's grammar as it decodes: which tokens may come next, and closing in time.

The matcher follows every token the request commits (the tokens of a failed-over stream
first, so a constrained answer resumes mid-way like any other). `allowed` is the mask of
the next step; `allowed_along` the masks a drafted continuation would meet, for judging
drafts against the same masks plain decoding would apply.

A model left to itself may not finish a JSON value within `max_tokens` (a random one
almost never closes a string). Within the last `CLOSING_WINDOW` tokens the constraint
keeps a plan: the closing strategy's path (closing.py) from where the answer stands. A
token the model chooses is kept if a plan still fits after it (the plan's own next token
always does); otherwise the constraint follows the plan it holds to the end. The answer
is then complete, valid JSON however the budget falls. When the grammar cannot close
within what is left at all (a schema longer than `max_tokens`), the constraint forces
nothing: the model's tokens run until the budget ends them, so the answer finishes with
"length" as any cut-short answer does, not with an early end-of-generation read as "stop".
"""

from collections.abc import Sequence

import llguidance
import numpy as np
from loguru import logger

from skulk.worker.engines.grammar.closing import Mask, closing_path, mask_of
from skulk.worker.engines.grammar.compile import GrammarRefused
from skulk.worker.engines.grammar.json_lexer import JsonLexer
from skulk.worker.engines.grammar.vocabulary import Vocabulary

CLOSING_WINDOW = 96


class GrammarBroken(RuntimeError):
    """A token the request committed (or had already streamed, on a resume) that the
    grammar rejects: the answer cannot go on. The engines end the request with an error
    chunk saying this, instead of failing the step."""


class Constraint:
    def __init__(self, vocabulary: Vocabulary, grammar: str,
                 already: Sequence[int] = ()) -> None:
        self._vocabulary = vocabulary
        self._matcher = llguidance.LLMatcher(vocabulary.tokenizer, grammar)
        if self._matcher.is_error():
            raise GrammarRefused(f"the grammar cannot be enforced: {self._matcher.get_error()}")
        if already and not self._matcher.consume_tokens(list(already)):
            raise GrammarBroken(f"the {len(already)} tokens already streamed do not follow "
                                f"the request's grammar, so the answer cannot resume there: "
                                f"{self._matcher.get_error()}")
        self._lexer = JsonLexer()
        for token in already:
            self._lexer.feed(vocabulary.piece(token))
        self._closing = False
        self._unclosable = False  # no closing path fits the budget: force nothing
        self._uses = np.zeros(vocabulary.size, dtype=np.int64)  # planned tokens so far
        self._plan: list[int] | None = None  # the closing path from the current state

    def allowed(self) -> Mask:
        """The tokens the grammar allows next, as a boolean row over the logits."""
        return mask_of(self._matcher, self._vocabulary.size)

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
        """The plan's next token, once the constraint follows it to the end."""
        if not self._closing:
            return None
        if self._plan:
            return self._plan.pop(0)
        return self._vocabulary.eos_token_ids[0]

    def vetted(self, token: int, remaining: int) -> int:
        """`token`, the model's choice, if the answer can still close in time after it;
        else the plan's token, from here on. `remaining`: the tokens the request may
        still generate, this one included."""
        if self._closing or self._unclosable or remaining > CLOSING_WINDOW \
                or token in self._vocabulary.eos_token_ids:
            return token
        plan = self._plan
        if plan and plan[0] == token and len(plan) <= remaining:
            self._plan = plan[1:]
            return token
        after = self._path_after([token], remaining - 1)
        if after is not None:
            self._plan = after
            return token
        if plan is None or len(plan) > remaining:
            plan = self._path_after([], remaining)
        if plan is None:  # cannot close in time whatever comes: let the budget cut it
            self._unclosable = True
            return token
        self._closing, self._plan = True, plan
        forced = self.forced()
        assert forced is not None
        return forced

    def _path_after(self, tokens: Sequence[int], limit: int) -> list[int] | None:
        matcher, lexer, uses = self._matcher.deep_copy(), self._lexer.copy(), self._uses.copy()
        for token in tokens:
            lexer.feed(self._vocabulary.piece(token))
            if not matcher.consume_token(token):
                return None
        try:
            return closing_path(matcher, lexer, uses, self._vocabulary, limit)
        except RuntimeError as error:
            # The strategy found no way on (a bug of its own, not the request's): the
            # request goes on unplanned and its budget cuts it, as for a path too long.
            logger.warning("no closing path for a constrained answer: {}", error)
            return None

    def advance(self, tokens: Sequence[int]) -> None:
        """Commit tokens the request produced (an end-of-generation token ends it); a
        token the grammar rejects raises GrammarBroken, and the matcher is unusable after."""
        for token in tokens:
            if token in self._vocabulary.eos_token_ids:
                return
            if self._plan is not None:
                self._uses[token] += 1
            self._lexer.feed(self._vocabulary.piece(token))
            if not self._matcher.consume_token(token):
                raise GrammarBroken(f"token {token} ({self._vocabulary.piece(token)!r}) "
                                    f"broke the request's grammar: "
                                    f"{self._matcher.get_error()}")
