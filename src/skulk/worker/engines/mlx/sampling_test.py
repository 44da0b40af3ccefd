"""Sampling one row of logits: greedy, truncation, and per-request seeds."""

import mlx.core as mx
import numpy as np

from skulk.worker.engines.mlx.sampling import RowSampler, sample_rows


def draws(sampler: RowSampler, logits: list[float], count: int = 300) -> set[int]:
    row = np.array(logits, dtype=np.float32)
    return {sampler.sample(row) for _ in range(count)}


def test_greedy_rows_take_the_argmax_and_sampled_rows_their_own_draw() -> None:
    logits = mx.array([[0.0, 3.0, 1.0], [2.0, 0.0, 1.9]])
    samplers = [RowSampler(temperature=0.0), RowSampler(temperature=0.0)]
    assert sample_rows(logits, samplers) == [1, 0]


def test_top_k_one_and_a_tiny_top_p_leave_only_the_likeliest() -> None:
    logits = [1.0, 1.2, 0.9, 1.1]
    assert draws(RowSampler(temperature=1.0, top_k=1, seed=1), logits) == {1}
    assert draws(RowSampler(temperature=1.0, top_p=0.01, seed=1), logits) == {1}


def test_min_p_drops_tokens_far_less_likely_than_the_best() -> None:
    # exp(-4) is under 0.05 of the best: token 2 can never be drawn.
    logits = [0.0, 0.0, -4.0]
    assert draws(RowSampler(temperature=1.0, seed=3), logits) == {0, 1}
    assert draws(RowSampler(temperature=1.0, min_p=0.0, seed=3), logits, 2000) == {0, 1, 2}


def test_a_seed_fixes_the_draws_and_another_seed_changes_them() -> None:
    row = np.array([0.5, 0.4, 0.3, 0.2, 0.1], dtype=np.float32)

    def sequence(seed: int) -> list[int]:
        sampler = RowSampler(temperature=1.0, seed=seed)
        return [sampler.sample(row) for _ in range(40)]

    assert sequence(7) == sequence(7)
    assert sequence(7) != sequence(8)
