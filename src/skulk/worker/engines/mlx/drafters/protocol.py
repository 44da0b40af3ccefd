"""The one drafter protocol: given the committed context, propose up to k tokens.

The generation loop owns everything else: it verifies the draft in one forward pass of
the target, commits what the accept rule keeps and trims the rest from its KV cache. A
drafter owns only its private state (an n-gram index, a draft model's own cache), kept
per request in a `DraftSession`. A draft that is wrong, late or empty can only lower
acceptance: it never changes what the target model outputs.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from skulk.shared.types.traces import Span

DrafterName = Literal["ngram", "draft_model", "remote"]
DRAFTER_NAMES: tuple[DrafterName, ...] = ("ngram", "draft_model", "remote")

Distribution = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Draft:
    """Proposed next tokens, and optionally the distribution each was drawn from.

    `probabilities[i]` is the drafter's distribution over the vocabulary at token i; None
    means the drafter is deterministic (every token had probability 1 under it), which is
    what the sampled accept rule then assumes.
    """

    tokens: tuple[int, ...] = ()
    probabilities: tuple[Distribution, ...] | None = None
    # What the draft rests on, in the drafter's own terms (an n-gram drafter: the length
    # of the matched suffix); acceptance is tracked per kind.
    kind: int = 0

    def __post_init__(self) -> None:
        if self.probabilities is not None and len(self.probabilities) != len(self.tokens):
            raise ValueError(f"a draft of {len(self.tokens)} tokens came with "
                             f"{len(self.probabilities)} distributions")

    def truncated(self, limit: int) -> "Draft":
        """At most `limit` tokens of this draft."""
        if len(self.tokens) <= limit:
            return self
        probabilities = None if self.probabilities is None else self.probabilities[:limit]
        return Draft(self.tokens[:limit], probabilities, self.kind)


EMPTY_DRAFT = Draft()


class DraftSession(Protocol):
    """One request's drafting state; used by one thread, in order."""

    def propose(self, context: Sequence[int], limit: int) -> Draft:
        """Up to `limit` tokens likely to follow `context` (every committed token: prompt
        and output so far). May return fewer, or none; must not raise for ordinary
        failures (an unreachable peer): an empty draft says the same."""
        ...

    def close(self) -> tuple[Span, ...]:
        """Release the session's state (the request left); what the request's trace
        should show of its drafting (a remote drafter's outages), without node or rank."""
        ...


class Drafter(Protocol):
    """A kind of drafter, shared by every request of one engine."""

    @property
    def name(self) -> DrafterName: ...

    def open(self, request_id: str) -> DraftSession:
        """A fresh session for one request."""
        ...
