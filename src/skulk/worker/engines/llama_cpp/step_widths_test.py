import pytest

from skulk.worker.engines.llama_cpp.step_widths import (
    SAMPLES_TO_TRUST,
    StepWidths,
    candidate_widths,
)


def test_candidates_are_all_the_requests_and_the_powers_of_two_below() -> None:
    assert candidate_widths(1) == [1]
    assert candidate_widths(4) == [4, 2, 1]
    assert candidate_widths(6) == [6, 4, 2, 1]
    assert candidate_widths(64) == [64, 32, 16, 8, 4, 2, 1]
    with pytest.raises(ValueError, match="at least one"):
        candidate_widths(0)


def measured(step_seconds: dict[int, float], decoding: int, steps: int,
             widths: StepWidths | None = None) -> tuple[StepWidths, list[int]]:
    """`steps` steps among `decoding` requests on a machine whose step of each width
    takes `step_seconds[width]`; the widths chosen."""
    widths = widths or StepWidths()
    chosen = []
    for _ in range(steps):
        width = widths.choose(decoding)
        widths.record(width, step_seconds[width])
        chosen.append(width)
    return widths, chosen


def test_a_fresh_engine_batches_everyone_first_then_measures_each_narrower_width() -> None:
    cost = {4: 4 * 0.0084, 2: 2 * 0.0096, 1: 0.0075}
    _, chosen = measured(cost, decoding=4, steps=3 * SAMPLES_TO_TRUST)
    assert chosen == [4] * SAMPLES_TO_TRUST + [2] * SAMPLES_TO_TRUST + [1] * SAMPLES_TO_TRUST


def test_where_one_at_a_time_costs_least_per_token_it_is_chosen() -> None:
    one_thread = {4: 4 * 0.0084, 2: 2 * 0.0096, 1: 0.0075}  # bench/README.md's figures
    _, chosen = measured(one_thread, decoding=4, steps=100)
    assert chosen[3 * SAMPLES_TO_TRUST:] == [1] * (100 - 3 * SAMPLES_TO_TRUST)


def test_where_batching_pays_every_request_decodes_every_step() -> None:
    gpu_like = {8: 0.011, 4: 0.0105, 2: 0.0102, 1: 0.010}
    _, chosen = measured(gpu_like, decoding=8, steps=100)
    assert set(chosen[4 * SAMPLES_TO_TRUST:]) == {8}


def test_a_tie_goes_to_the_wider_step() -> None:
    _, chosen = measured({2: 0.02, 1: 0.01}, decoding=2, steps=20)
    assert chosen[-1] == 2


def test_every_width_is_measured_again_now_and_then_and_the_choice_follows_the_machine() -> None:
    widths = StepWidths(recheck_steps=50)
    single_cheaper = {4: 4 * 0.009, 2: 2 * 0.009, 1: 0.007}
    widths, chosen = measured(single_cheaper, 4, 60, widths)
    assert chosen[-1] == 1
    assert chosen[3 * SAMPLES_TO_TRUST:].count(4) >= 1  # re-measured after 50 steps
    batch_cheaper = {4: 4 * 0.004, 2: 2 * 0.006, 1: 0.007}  # e.g. more threads now
    _, chosen = measured(batch_cheaper, 4, 2000, widths)
    assert chosen[-1] == 4
    assert chosen[-200:].count(4) > 190


def test_one_preempted_step_does_not_decide_alone() -> None:
    widths = StepWidths()
    cost = {2: 2 * 0.006, 1: 0.007}
    assert widths.choose(2) == 2
    widths.record(2, 10 * cost[2])  # the first step measured waited for another process
    widths, _ = measured(cost, 2, 3 * SAMPLES_TO_TRUST, widths)
    assert widths.per_token()[2] == pytest.approx(cost[2] / 2)
    widths.record(2, 10 * cost[2])  # the batch's step once waited for another process
    assert widths.per_token()[2] == pytest.approx(1.1 * cost[2] / 2)
    assert widths.choose(2) == 2
