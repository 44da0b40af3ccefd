"""A generated token's log probability and the likeliest alternatives, from the logits it
was drawn from; both engines report them alike.

`scored` keeps the numbers only (token ids), so the rank that has the logits can send
them to the rank that talks to the client, which `described` turns into text."""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from skulk.shared.types.chunks import TokenLogprob, TopLogprob


@dataclass(frozen=True)
class Scored:
    """A token's log probability and the likeliest tokens', by id (likeliest first)."""

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


def scored(logits: npt.NDArray[np.float32], token: int, top: int) -> Scored:
    """The token's log probability under the raw model distribution (before temperature
    and truncation), and the `top` likeliest tokens'."""
    shifted = logits - logits.max()
    logprobs = shifted - np.log(np.exp(shifted).sum())
    best = [int(c) for c in np.argpartition(logprobs, -top)[-top:]] if top else []
    best.sort(key=lambda c: -logprobs[c])
    return Scored(token, float(logprobs[token]),
                  tuple((c, float(logprobs[c])) for c in best))


def described(entry: Scored, piece: Callable[[int], bytes]) -> TokenLogprob:
    """The entry as the dialects report it: each token's text and bytes."""

    def one(candidate: int, logprob: float) -> TopLogprob:
        raw = piece(candidate)
        return TopLogprob(token=raw.decode("utf-8", errors="replace"), bytes=list(raw),
                          logprob=logprob)

    chosen = one(entry.token, entry.logprob)
    return TokenLogprob(token=chosen.token, bytes=chosen.bytes, logprob=chosen.logprob,
                        top=[one(c, logprob) for c, logprob in entry.top])


def token_logprob(logits: npt.NDArray[np.float32], token: int, top: int,
                  piece: Callable[[int], bytes]) -> TokenLogprob:
    """`scored`, then `described`."""
    return described(scored(logits, token, top), piece)
