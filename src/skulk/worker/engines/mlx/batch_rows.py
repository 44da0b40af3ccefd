"""The requests a generation loop holds: those still prefilling their own cache, and the
rows of the decoding batch (their tokens, counts and, on rank 0, their output)."""

from dataclasses import dataclass, field

from skulk.worker.engines.grammar.constraint import Constraint
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.requests import Request
from skulk.worker.engines.token_logprobs import Scored


@dataclass
class Prefilling:
    """A request that joined and whose prompt is still going into its own cache."""

    request: Request
    cache: list[mlx_api.LayerCache]
    position: int  # prompt tokens whose KV is in `cache`
    reused: int


@dataclass
class Row:
    """A request in the decoding batch; its cache is row `index` of the batch cache."""

    request: Request
    next_input: int  # the token the next forward feeds
    kv_tokens: list[int]  # the tokens whose KV the batch cache holds for this row
    reused: int
    output: StreamedText | None  # rank 0 only
    generated: int = 0  # tokens committed as output (every rank counts them)
    drafted: int = 0  # drafted tokens verified for this request
    accepted: int = 0  # of which the model kept
    constraint: Constraint | None = None  # its grammar, on the deciding rank
    # Why its grammar cannot go on (the deciding rank's words; the others learn it from
    # deciding.GRAMMAR_BROKEN): the request ends with an error.
    broken: str | None = None
    failed: bool = False  # every rank: its grammar broke, and it leaves as failed
    # Log probabilities of tokens decided and not yet streamed: the deciding rank's, and
    # rank 0's once carried there (score_carrier.py).
    scored: list[Scored] = field(default_factory=list)
