"""The accept rules: which drafted tokens the target model keeps, and the token after.

Verification feeds [last committed token, d1 .. dn] in one forward pass, which gives the
target's distribution at n + 1 positions: position i predicts the token after d_i (the
first after the last committed token). Both rules commit a prefix of the draft and then
one token of the target's own (the correction at the first rejection, or the bonus
token when every draft was kept), so every round yields at least one token.

- Greedy: keep drafts while each equals the target's argmax; the next token is the
  argmax at the first mismatch. The output is exactly plain greedy decoding.
- Sampled: keep d_i with probability min(1, p_i(d_i) / q_i(d_i)); on the first rejection
  draw from the residual max(0, p_i - q_i), renormalised (Leviathan et al., Chen et al.).
  Every committed token is then distributed exactly as the target sampler's p.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from skulk.worker.engines.mlx.drafters.protocol import Distribution


@dataclass(frozen=True)
class Verdict:
    """How one verified draft ends: drafts kept, and the target's token after them."""

    accepted: int
    next_token: int


def accept_greedy(drafts: Sequence[int], target_choices: Sequence[int]) -> Verdict:
    """`target_choices[i]` is the target's argmax at verify position i (len(drafts) + 1)."""
    if len(target_choices) != len(drafts) + 1:
        raise ValueError(f"{len(drafts)} drafts need {len(drafts) + 1} target choices, "
                         f"got {len(target_choices)}")
    for index, draft in enumerate(drafts):
        if target_choices[index] != draft:
            return Verdict(index, int(target_choices[index]))
    return Verdict(len(drafts), int(target_choices[len(drafts)]))


def accept_sampled(drafts: Sequence[int], draft_probabilities: Sequence[Distribution] | None,
                   target_probabilities: Sequence[Distribution],
                   generator: np.random.Generator) -> Verdict:
    """Probability-ratio acceptance. `target_probabilities[i]` is the target sampler's
    distribution at verify position i; `draft_probabilities` None means a deterministic
    drafter (q_i is one-hot on d_i)."""
    if len(target_probabilities) != len(drafts) + 1:
        raise ValueError(f"{len(drafts)} drafts need {len(drafts) + 1} target "
                         f"distributions, got {len(target_probabilities)}")
    for index, draft in enumerate(drafts):
        p = target_probabilities[index]
        q_of_draft = 1.0 if draft_probabilities is None else float(
            draft_probabilities[index][draft])
        ratio = 1.0 if q_of_draft <= 0.0 else min(1.0, float(p[draft]) / q_of_draft)
        if generator.random() < ratio:
            continue
        if draft_probabilities is None:
            residual = p.copy()
            residual[draft] = 0.0
        else:
            residual = np.maximum(p - draft_probabilities[index], 0.0)
        return Verdict(index, draw(residual, p, generator))
    return Verdict(len(drafts), draw(target_probabilities[len(drafts)], None, generator))


def draw(weights: Distribution, fallback: Distribution | None,
         generator: np.random.Generator) -> int:
    """One token drawn from `weights` (renormalised); from `fallback` if they sum to 0."""
    total = float(weights.sum())
    if total <= 0.0:
        if fallback is None:
            raise ValueError("cannot draw from a distribution with no mass")
        weights, total = fallback, float(fallback.sum())
    support = np.flatnonzero(weights > 0.0)
    return int(support[generator.choice(len(support), p=weights[support] / total)])
