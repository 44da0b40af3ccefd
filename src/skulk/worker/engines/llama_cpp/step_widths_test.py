from collections import Counter

import pytest

from skulk.worker.engines.llama_cpp.step_widths import (
    FIRST_SAMPLES,
    StepWidths,
    candidate_widths,
)

# Seconds per token of a decode step by width, as measured on these 2-core machines
# (bench/history/serving-path.md, "Batching on one thread"): one thread, and two.
ONE_THREAD = {4: 0.0075, 3: 0.0083, 2: 0.0095, 1: 0.0070}
TWO_THREADS = {4: 0.0047, 3: 0.0053, 2: 0.0066, 1: 0.0064}
FIRST = 3 * FIRST_SAMPLES  # steps that first time widths 4, 2 and 1


def test_candidates_are_all_the_requests_and_the_powers_of_two_below() -> None:
    assert candidate_widths(1) == [1]
    assert candidate_widths(4) == [4, 2, 1]
    assert candidate_widths(6) == [6, 4, 2, 1]
    assert candidate_widths(64) == [64, 32, 16, 8, 4, 2, 1]
    with pytest.raises(ValueError, match="at least one"):
        candidate_widths(0)


def steps(widths: StepWidths, per_token: dict[int, float], decoding: int,
          count: int) -> list[int]:
    """`count` steps among `decoding` requests on a machine whose steps cost
    `per_token[width]` a token; the widths chosen."""
    chosen = []
    for _ in range(count):
        width = widths.choose(decoding)
        widths.record(width, width * per_token[width])
        chosen.append(width)
    return chosen


def test_each_width_is_timed_widest_first_then_the_cheapest_per_token_is_taken() -> None:
    chosen = steps(StepWidths(), ONE_THREAD, decoding=4, count=200)
    assert chosen[:FIRST] == [4] * FIRST_SAMPLES + [2] * FIRST_SAMPLES + [1] * FIRST_SAMPLES
    later = Counter(chosen[FIRST:])
    assert later[1] > 0.95 * sum(later.values())
    assert later[4] >= 2 and later[2] >= 2, "the other widths are timed now and then"


def test_where_batching_pays_every_request_decodes_almost_every_step() -> None:
    later = Counter(steps(StepWidths(), TWO_THREADS, decoding=4, count=200)[FIRST:])
    assert later[4] > 0.95 * sum(later.values())


def test_a_gpu_is_not_asked_to_decode_its_requests_one_at_a_time() -> None:
    gpu = {64: 0.0002, 32: 0.0004, 16: 0.0008, 8: 0.0016, 4: 0.003, 2: 0.006, 1: 0.012}
    chosen = steps(StepWidths(), gpu, decoding=64, count=2000)
    assert chosen[:FIRST_SAMPLES] == [64] * FIRST_SAMPLES
    assert chosen[FIRST_SAMPLES:FIRST_SAMPLES + 2] == [32, 32]  # far worse: timing stops
    later = Counter(chosen[FIRST_SAMPLES + 2:])
    assert set(later) <= {64, 32}, "a width narrower than a far worse one was timed"
    assert later[32] <= 2000 // (8 * 32) + 1, "a far worse width was timed more than rarely"


def test_a_width_ruled_out_by_two_preempted_steps_is_timed_again_later() -> None:
    widths = StepWidths(probe_every=4)
    timed_2 = 0
    for _ in range(600):
        width = widths.choose(4)
        if width == 2:
            timed_2 += 1
        waited = 3 if width == 2 and timed_2 <= 2 else 1  # width 2's first two steps
        widths.record(width, width * ONE_THREAD[width] * waited)
    assert timed_2 > 2, "width 2 was never timed again"
    figures = widths.per_token()
    assert figures[2] == pytest.approx(ONE_THREAD[2])
    assert min(figures, key=figures.__getitem__) == 1


def test_a_tie_goes_to_the_wider_step() -> None:
    chosen = steps(StepWidths(), {2: 0.01, 1: 0.01}, decoding=2, count=30)
    assert Counter(chosen[2 * FIRST_SAMPLES:]).most_common(1)[0][0] == 2


def test_the_choice_follows_the_machine() -> None:
    widths = StepWidths(probe_every=8)
    steps(widths, ONE_THREAD, 4, 100)
    assert widths.choose(4) == 1
    chosen = steps(widths, TWO_THREADS, 4, 300)  # e.g. a second compute thread now
    assert Counter(chosen[-100:]).most_common(1)[0][0] == 4


def test_a_width_timed_long_ago_does_not_beat_one_timed_now() -> None:
    """Steps grow dearer with their context: every width's figure covers the same
    stretch, so the width in use is not the one that looks dearest."""
    widths = StepWidths(probe_every=4)
    chosen = []
    for step in range(2000):
        growth = 1 + step / 1000  # a step's cost doubles over the run
        width = widths.choose(4)
        widths.record(width, width * ONE_THREAD[width] * growth)
        chosen.append(width)
    assert Counter(chosen[-500:]).most_common(1)[0][0] == 1


def test_requests_joining_are_timed_at_their_new_width() -> None:
    widths = StepWidths()
    steps(widths, ONE_THREAD, 2, 20)
    assert widths.choose(4) == 4  # four decoding now: four not yet timed


def test_one_step_that_waited_for_another_process_does_not_decide() -> None:
    widths = StepWidths()
    assert widths.choose(2) == 2
    widths.record(2, 10 * 2 * 0.006)  # this step waited for another process
    steps(widths, {2: 0.006, 1: 0.007}, 2, 2 * FIRST_SAMPLES)
    assert widths.per_token()[2] == pytest.approx(0.006)
    assert widths.choose(2) == 2


def test_a_step_not_timed_is_not_recorded() -> None:
    widths = StepWidths()
    steps(widths, ONE_THREAD, 2, 2 * FIRST_SAMPLES)
    before = widths.per_token()
    width = widths.choose(2)  # an ordinary step: not timed
    widths.record(width, 100.0)
    assert widths.per_token() == before
