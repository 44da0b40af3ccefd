"""The adaptive draft length: long drafts while they are kept, short or none when they
are rejected or cost more than they save, and probes after a pause."""

import pytest

from skulk.worker.engines.mlx.speculation.cost import ForwardCost
from skulk.worker.engines.mlx.speculation.policy import (
    FIRST_PAUSE_ROUNDS,
    PROBE_LENGTH,
    Acceptance,
    DraftPolicy,
    expected_tokens,
)


def cost_of(one: float, slope: float, most: int = 17) -> ForwardCost:
    cost = ForwardCost()
    for tokens in range(1, most + 1):
        cost.observe(tokens, one * (1 + slope * (tokens - 1)))
    return cost


def test_expected_tokens_multiply_the_per_position_rates() -> None:
    assert expected_tokens([0.0] * 8, 8) == 1.0
    assert expected_tokens([1.0] * 8, 8) == 9.0
    assert expected_tokens([0.5, 0.5], 2) == pytest.approx(1.75)
    # All or nothing: a modest first rate, certain after it.
    assert expected_tokens([0.5, 1.0, 1.0], 3) == pytest.approx(2.5)


def test_per_position_rates_learn_all_or_nothing_drafts() -> None:
    acceptance = Acceptance()
    for _ in range(20):
        acceptance.record(8, 8)
        acceptance.record(8, 0)
    first, *later = acceptance.rates(8)
    assert 0.4 < first < 0.6 and all(r > 0.9 for r in later)


def expensive(policy: DraftPolicy) -> DraftPolicy:
    policy.draft_seconds_per_token = 0.01  # a fifth of a plain step: asked, not cut
    return policy


def test_kept_drafts_lengthen_the_draft_up_to_the_cap() -> None:
    policy = expensive(DraftPolicy(max_draft=16))
    cost = cost_of(0.05, 0.1)
    first = policy.ask_length(cost)
    for _ in range(30):
        length = policy.ask_length(cost)
        policy.record(0, length, length, draft_seconds=0.0)
    final = policy.ask_length(cost)
    assert final >= 12 and final > first


def test_rejections_shorten_the_draft_then_stop_it() -> None:
    policy = expensive(DraftPolicy(max_draft=16))
    policy.draft_seconds_per_token = 0.0
    policy.kinds[0] = Acceptance()
    cost = cost_of(0.05, 0.3)
    lengths = []
    for _ in range(12):
        length = policy.keep_length(0, 16, cost)
        lengths.append(length)
        policy.record(0, length, 0, draft_seconds=0.0)
    assert lengths[0] > lengths[2]
    assert 0 in lengths and policy.pauses >= 1


def test_a_cheap_drafter_is_asked_for_the_most_and_cut_per_kind() -> None:
    policy = DraftPolicy(max_draft=16, draft_seconds_per_token=0.00001)
    cost = cost_of(0.05, 0.2)
    for _ in range(10):
        policy.record(4, 16, 16, draft_seconds=0.0001)  # long matches: always kept
        policy.record(1, 3, 0, draft_seconds=0.0001)  # one-token matches: never
    assert policy.ask_length(cost) == 16
    assert policy.keep_length(4, 16, cost) >= 8
    assert policy.keep_length(1, 16, cost) == 0


def test_a_pause_ends_with_a_short_probe_and_a_failed_probe_doubles_the_next_pause(
) -> None:
    policy = expensive(DraftPolicy(max_draft=8))
    policy.kinds[0] = Acceptance(reached=[5.0], kept=[0.0])
    cost = cost_of(0.05, 0.3)
    assert policy.ask_length(cost) == 0 and policy.pauses == 1
    skipped = [policy.ask_length(cost) for _ in range(FIRST_PAUSE_ROUNDS - 1)]
    assert skipped == [0] * (FIRST_PAUSE_ROUNDS - 1)
    assert policy.ask_length(cost) == PROBE_LENGTH
    policy.record(0, PROBE_LENGTH, 0, draft_seconds=0.0005)
    assert policy.ask_length(cost) == 0
    assert policy.kinds[0].pause_left == 2 * FIRST_PAUSE_ROUNDS


def test_a_slow_drafter_is_not_worth_it_even_when_always_right() -> None:
    """Kept drafts that each cost more than a plain step save nothing."""
    policy = DraftPolicy(max_draft=8, draft_seconds_per_token=0.08)
    sure = Acceptance(reached=[50.0] * 8, kept=[50.0] * 8)
    assert policy.best_length(sure, cost_of(0.05, 0.1)) == 0
    policy.draft_seconds_per_token = 0.0
    assert policy.best_length(sure, cost_of(0.05, 0.1)) == 8


def test_until_a_plain_step_is_timed_the_cap_is_used() -> None:
    assert DraftPolicy(max_draft=6).ask_length(ForwardCost()) == 6


def test_max_draft_zero_never_drafts() -> None:
    assert DraftPolicy(max_draft=0).ask_length(cost_of(0.05, 0.1)) == 0


def test_forward_cost_fits_a_line_through_noisy_counts() -> None:
    cost = ForwardCost()
    assert cost.estimate(4) is None
    cost.observe(1, 0.1)
    assert cost.estimate(5) == pytest.approx(0.1 + 0.3 * 0.1 * 4)  # the prior slope
    cost.observe(3, 0.14)
    cost.observe(5, 0.18)
    assert cost.estimate(9) == pytest.approx(0.1 + 0.02 * 8)


def test_a_one_token_step_is_asked_for_first_and_when_the_last_is_old() -> None:
    assert ForwardCost().wants_one_token_step  # nothing to judge a draft against yet
    cost = cost_of(0.05, 0.1)
    assert not cost.wants_one_token_step
    for _ in range(32):
        cost.observe(9, 0.09)
    assert cost.wants_one_token_step
    cost.observe(1, 0.05)
    assert not cost.wants_one_token_step


def test_a_drafter_known_to_be_hopeless_is_never_asked() -> None:
    """Not even for probes: costs alone make it lose, whatever the text."""
    cost = cost_of(0.05, 0.1)
    slow = DraftPolicy(max_draft=4, draft_seconds_per_token=0.1)
    assert slow.hopeless(cost)
    assert [slow.ask_length(cost) for _ in range(600)] == [0] * 600
    assert not DraftPolicy(max_draft=4, draft_seconds_per_token=0.001).hopeless(cost)
    assert not DraftPolicy(max_draft=4).hopeless(cost)
    fixed = DraftPolicy(max_draft=4, draft_seconds_per_token=0.1, adaptive=False)
    assert fixed.ask_length(cost) == 4  # the benchmark's naive baseline drafts regardless


def test_a_round_without_a_drafting_time_counts_only_for_acceptance() -> None:
    policy = DraftPolicy(max_draft=4)
    policy.record(0, drafted=4, accepted=4, draft_seconds=None)
    assert policy.draft_seconds_per_token is None and policy.kinds[0].kept[0] > 0
    policy.record(0, drafted=4, accepted=4, draft_seconds=0.4)
    assert policy.draft_seconds_per_token == pytest.approx(0.1)
