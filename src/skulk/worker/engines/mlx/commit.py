"""A step's tokens committed to a row of the batch, the same on every rank: the kept
drafts and the next token join the row; rank 0 streams them (with their log
probabilities, named with its vocabulary).

A row whose grammar broke (deciding.GRAMMAR_BROKEN, handed to every rank in place of a
token) ends with an error: rank 0 sends the client an error chunk at once, every rank
marks the row failed, and it leaves at the next agreement like a finished one, feeding a
filler token until then (its output is discarded). The runner lives on.
"""

from skulk.shared.types.chunks import ErrorChunk
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.mlx.batch_rows import Row
from skulk.worker.engines.mlx.deciding import GRAMMAR_BROKEN
from skulk.worker.engines.mlx.speculation.accept import Verdict
from skulk.worker.engines.protocol import EngineEvent, TaskOutput
from skulk.worker.engines.token_logprobs import described

# What a rank other than the deciding one says of a broken grammar (it sees only the
# sentinel; the deciding rank, when it is rank 0, says which token and why).
BROKEN_ELSEWHERE = ("the constrained output cannot go on: a token broke the request's "
                    "grammar (a resumed answer the grammar rejects, or a token its mask "
                    "should have forbidden)")
_FILLER = 0  # a broken row's input until it leaves: any valid token id


def commit(row: Row, drafts: list[int], verdict: Verdict, vocabulary: Vocabulary | None,
           events: list[EngineEvent]) -> bool:
    """Append the kept drafts and the verdict's token to the row (the cache already holds
    the next input and the kept drafts). True when rank 0 sees the request end at this
    step: its output finished, or its grammar broke."""
    kept = drafts[: verdict.accepted]
    row.kv_tokens.append(row.next_input)
    row.kv_tokens.extend(kept)
    broke = verdict.next_token == GRAMMAR_BROKEN
    row.next_input = _FILLER if broke else verdict.next_token
    row.drafted += len(drafts)
    row.accepted += verdict.accepted
    new_tokens = [*kept, verdict.next_token]
    row.generated += len(new_tokens)
    if broke:
        return _fail(row, events)
    if row.output is None or row.failed:
        return False
    row.output.note_speculation(row.request.speculation.drafter, row.drafted, row.accepted)
    for token in new_tokens:
        if row.output.finished is not None:
            break
        logprob = None
        if row.scored and not row.output.is_end(token):
            if vocabulary is None:
                raise RuntimeError("rank 0 has no vocabulary to name scored tokens")
            logprob = described(row.scored.pop(0), vocabulary.piece)
        for chunk in row.output.on_token(token, logprob):
            events.append(TaskOutput(row.request.task_id, chunk))
    return row.output.finished is not None


def _fail(row: Row, events: list[EngineEvent]) -> bool:
    if row.failed or (row.output is not None and row.output.finished is not None):
        return False  # already ended (the sentinel repeats until the row leaves)
    row.failed = True
    row.broken = row.broken or BROKEN_ELSEWHERE
    if row.output is None:
        return False
    events.append(TaskOutput(row.request.task_id,
                             ErrorChunk(error_kind="internal", message=row.broken)))
    return True
