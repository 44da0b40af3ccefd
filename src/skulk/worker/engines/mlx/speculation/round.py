"""One drafting round of a request decoding alone, the same call on every rank.

The deciding rank asks the request's drafter for tokens; one fixed-shape all_sum hands
the draft to every rank; every rank verifies [next input + draft] in one forward pass;
the deciding rank applies the accept rule and a second all_sum hands every rank the
verdict, after which each rank trims the rejected tail from its own cache. Only the
deciding rank drafts or judges, so the ranks cannot disagree whatever their arithmetic.
"""

import time
from collections.abc import Callable

import mlx.core as mx

from skulk.worker.engines.grammar.constraint import CLOSING_WINDOW
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.mlx import membership, mlx_api
from skulk.worker.engines.mlx.batch_rows import Row
from skulk.worker.engines.mlx.deciding import (
    GRAMMAR_BROKEN,
    decide_rows,
    masked,
    note,
    remaining,
)
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.mlx.speculation import vectors
from skulk.worker.engines.mlx.speculation.accept import Verdict
from skulk.worker.engines.mlx.speculation.speculator import Speculator

# (vector, whether it is the deciding rank's) -> the vector summed over every rank.
AllSum = Callable[[membership.Vector, bool], membership.Vector]


def speculative_round(shard: ModelShard, speculator: Speculator | None, slots: int,
                      all_sum: AllSum, row: Row, cache: list[mlx_api.LayerCache],
                      vocabulary: Vocabulary | None = None) -> tuple[list[int], Verdict]:
    """The drafts every rank verified and the verdict on them; `row`'s cache holds the
    next input and the kept drafts afterwards. `speculator` and `vocabulary` are the
    deciding rank's."""
    proposed: tuple[int, ...] = ()
    if speculator is not None:
        context = [*row.kv_tokens, row.next_input]
        room = row.request.max_tokens - row.generated - 1
        if row.constraint is not None:
            # Drafts stop short of where the grammar may start closing the answer, and
            # at the first token it forbids.
            room = min(room, remaining(row) - 1 - CLOSING_WINDOW)
        proposed = speculator.draft(row.request, context, room).tokens
        if row.constraint is not None:
            proposed = proposed[: row.constraint.allowed_prefix(proposed)]
    [drafts] = vectors.decode_drafts(all_sum(vectors.encode_drafts([proposed], slots), True), 1)
    started = time.perf_counter()
    logits = shard.forward(mx.array([[row.next_input, *drafts]], dtype=mx.int32), cache)
    verdict = Verdict(0, 0)
    if shard.decides:
        if logits is None:
            raise RuntimeError("the deciding shard returned no logits")
        assert speculator is not None or not drafts
        if speculator is not None and drafts:
            verify = logits[0]
            if row.constraint is not None:
                verify = masked(verify, row.constraint.allowed_along(drafts))
            verdict = speculator.judge(row.request, verify, drafts)
            kept = [*drafts[: verdict.accepted], verdict.next_token]
            note(row, logits[0, : len(kept)], kept, vocabulary)
        else:
            verdict = Verdict(0, decide_rows(logits[:, -1, :], [row], vocabulary)[0])
        if row.broken is not None:  # every rank ends the request (commit.py)
            verdict = Verdict(0, GRAMMAR_BROKEN)
    else:
        mlx_api.evaluate_cache(cache)
    [verdict] = vectors.decode_verdicts(all_sum(vectors.encode_verdicts([verdict], slots), True),
                                        1)
    mlx_api.trim_cache(cache, len(drafts) - verdict.accepted)
    if speculator is not None:
        speculator.record(row.request, len(drafts), verdict.accepted,
                          time.perf_counter() - started)
    return list(drafts), verdict
