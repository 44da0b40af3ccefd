"""A generated token's log probability and the likeliest alternatives, from the logits it
was drawn from; both engines report them alike."""

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from skulk.shared.types.chunks import TokenLogprob, TopLogprob


def token_logprob(logits: npt.NDArray[np.float32], token: int, top: int,
                  piece: Callable[[int], bytes]) -> TokenLogprob:
    """The token's log probability under the raw model distribution (before temperature
    and truncation), and the `top` likeliest tokens'."""
    shifted = logits - logits.max()
    logprobs = shifted - np.log(np.exp(shifted).sum())

    def entry(candidate: int) -> TopLogprob:
        raw = piece(candidate)
        return TopLogprob(token=raw.decode("utf-8", errors="replace"), bytes=list(raw),
                          logprob=float(logprobs[candidate]))

    best = [int(c) for c in np.argpartition(logprobs, -top)[-top:]] if top else []
    best.sort(key=lambda c: -logprobs[c])
    chosen = entry(token)
    return TokenLogprob(token=chosen.token, bytes=chosen.bytes, logprob=chosen.logprob,
                        top=[entry(c) for c in best])
