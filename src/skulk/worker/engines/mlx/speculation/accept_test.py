"""The accept rules on crafted distributions: all kept, none, partial, the bonus token,
and the sampled rule's output distribution."""

import numpy as np
import pytest

from skulk.worker.engines.mlx.speculation.accept import (
    Verdict,
    accept_greedy,
    accept_sampled,
)


def test_greedy_keeps_every_draft_and_adds_the_bonus_token() -> None:
    assert accept_greedy([5, 6, 7], [5, 6, 7, 8]) == Verdict(3, 8)


def test_greedy_rejecting_the_first_draft_yields_the_correction() -> None:
    assert accept_greedy([5, 6, 7], [4, 6, 7, 8]) == Verdict(0, 4)


def test_greedy_keeps_the_matching_prefix_only() -> None:
    # The third target choice would match too, but nothing after a rejection counts.
    assert accept_greedy([5, 6, 7], [5, 9, 7, 8]) == Verdict(1, 9)


def test_greedy_with_no_draft_is_a_plain_step() -> None:
    assert accept_greedy([], [42]) == Verdict(0, 42)
    with pytest.raises(ValueError):
        accept_greedy([1, 2], [1, 2])


def one_hot(token: int, size: int = 4) -> np.ndarray:
    vector = np.zeros(size)
    vector[token] = 1.0
    return vector


def test_sampled_keeps_a_draft_the_target_is_certain_of() -> None:
    rng = np.random.default_rng(0)
    targets = [one_hot(1), one_hot(2), one_hot(3)]
    assert accept_sampled([1, 2], None, targets, rng) == Verdict(2, 3)


def test_sampled_rejects_a_draft_the_target_never_picks_and_corrects_from_the_residual(
) -> None:
    rng = np.random.default_rng(0)
    p = np.array([0.0, 0.5, 0.5, 0.0])
    for _ in range(50):
        verdict = accept_sampled([3], None, [p, one_hot(0)], rng)
        assert verdict.accepted == 0 and verdict.next_token in (1, 2)


def test_sampled_partial_acceptance_stops_at_the_first_rejection() -> None:
    rng = np.random.default_rng(0)
    targets = [one_hot(1), one_hot(0), one_hot(3), one_hot(2)]
    assert accept_sampled([1, 2, 3], None, targets, rng) == Verdict(1, 0)


@pytest.mark.parametrize("draft_kind", ["deterministic", "distribution"])
def test_sampled_acceptance_draws_tokens_distributed_as_the_target(draft_kind: str) -> None:
    """Over many rounds the first committed token follows p exactly, whatever the drafter
    proposes (a chi-square test at a generous threshold)."""
    rng = np.random.default_rng(1)
    p = np.array([0.5, 0.25, 0.15, 0.1])
    q = np.array([0.1, 0.2, 0.3, 0.4])
    draws = 20000
    counts = np.zeros(4)
    for _ in range(draws):
        if draft_kind == "deterministic":
            draft, probabilities = 3, None  # always proposes the target's rarest token
        else:
            draft = int(rng.choice(4, p=q))
            probabilities = [q]
        verdict = accept_sampled([draft], probabilities, [p, p], rng)
        counts[draft if verdict.accepted else verdict.next_token] += 1
    expected = p * draws
    chi_square = float(((counts - expected) ** 2 / expected).sum())
    assert chi_square < 16.3, (counts / draws, chi_square)  # p = 0.001 with 3 dof
