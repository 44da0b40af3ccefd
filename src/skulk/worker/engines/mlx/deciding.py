"""How the deciding rank turns a step's logits into tokens: each request's grammar mask
(computed while the model computes the step), its sampler, the closing strategy near the
end of its budget, and the log probabilities it asked for, from the raw logits."""

from collections.abc import Sequence

import mlx.core as mx
import numpy as np

from skulk.worker.engines.grammar.closing import Mask
from skulk.worker.engines.grammar.constraint import GrammarBroken
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.batch_rows import Row
from skulk.worker.engines.mlx.sampling import sample_rows
from skulk.worker.engines.token_logprobs import scored

# The token the deciding rank hands every rank for a row whose grammar broke (a resumed
# answer the grammar rejects, or a token it should have forbidden): every rank then ends
# the request with an error at the same step (commit.py).
GRAMMAR_BROKEN = -1


def remaining(row: Row) -> int:
    """Tokens the row may still generate, the next one included."""
    return row.request.max_tokens - row.generated


def masked(logits: mx.array, masks: Sequence[Mask | None]) -> mx.array:
    """Logits [B, V] with what each row's mask forbids set to -inf (None: nothing)."""
    if all(mask is None for mask in masks):
        return logits
    allowed = np.ones(logits.shape, dtype=np.bool_)
    for index, mask in enumerate(masks):
        if mask is not None:
            allowed[index] = mask
    return mx.where(mx.array(allowed), logits, mx.array(-np.inf, dtype=logits.dtype))


def decide_rows(logits: mx.array, rows: Sequence[Row], vocabulary: Vocabulary | None
                ) -> list[int]:
    """The next token of every row from its logits [B, V] (lazy: the masks are computed
    on the CPU while they evaluate); advances each row's grammar and keeps its scores."""
    constraints = [None if row.broken is not None else row.constraint for row in rows]
    forced: list[int | None] = [None] * len(rows)
    masks: list[Mask | None] = [None] * len(rows)
    if any(c is not None for c in constraints):
        mlx_api.start_evaluating(logits)
        for index, constraint in enumerate(constraints):
            if constraint is not None:
                forced[index] = constraint.forced()
                masks[index] = constraint.allowed() if forced[index] is None else None
    chosen = sample_rows(masked(logits, masks), [row.request.sampler for row in rows])
    for index, (row, constraint) in enumerate(zip(rows, constraints, strict=True)):
        token = forced[index]
        if token is None:
            token = chosen[index] if constraint is None else constraint.vetted(
                chosen[index], remaining(row))
        chosen[index] = token
        note(row, logits[index], [token], vocabulary)
        if row.broken is not None:
            chosen[index] = GRAMMAR_BROKEN
    return chosen


def note(row: Row, logits: mx.array, tokens: Sequence[int],
         vocabulary: Vocabulary | None) -> None:
    """Advance the row's grammar over tokens it commits and score them when asked (by id:
    rank 0 names them, score_carrier.py brings them there from a pipeline's last rank);
    `logits` [len(tokens), V] (or [V] for one token) are the rows they were drawn from."""
    if row.broken is not None:
        return
    if row.constraint is not None:
        try:
            row.constraint.advance(tokens)
        except GrammarBroken as broken:
            row.constraint, row.broken = None, str(broken)
            return
    top = row.request.params.logprobs
    if top is None:
        return
    if vocabulary is None:
        raise RuntimeError("log probabilities need the deciding rank's end tokens")
    rows = np.array(logits, dtype=np.float32).reshape(len(tokens), -1)
    for index, token in enumerate(tokens):
        if token not in vocabulary.eos_token_ids:
            row.scored.append(scored(rows[index], token, top))
