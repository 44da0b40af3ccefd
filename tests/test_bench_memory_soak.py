"""memory_soak.py's figures: the slope of RSS over requests after the warm-up window, and
the reading of a process's RSS. The soak itself (a real node, thousands of requests) is
the benchmark's run, not a test."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.memory_soak import growth, rss_mib, slope  # noqa: E402


def test_the_slope_is_least_squares_and_flat_or_single_points_read_zero() -> None:
    assert slope([500, 1000, 1500], [100.0, 101.0, 102.0]) == pytest.approx(0.002)
    assert slope([500, 1000, 1500, 2000], [120.0, 121.0, 120.0, 121.0]) == \
        pytest.approx(0.0004)
    assert slope([500], [100.0]) == 0.0
    assert slope([500, 500], [100.0, 130.0]) == 0.0


def test_growth_reads_mib_per_thousand_requests_against_the_warm_up() -> None:
    flat = growth([500, 1000, 1500, 2000], [120.0, 121.0, 121.0, 121.0])
    leaking = growth([500, 1000, 1500, 2000], [120.0, 130.0, 140.0, 150.0])
    assert flat["baseline_mib"] == 120.0 and flat["mib_per_1000_requests"] < 1.0
    assert leaking["mib_per_1000_requests"] == pytest.approx(20.0)
    assert leaking["last_over_baseline"] == pytest.approx(1.25)


def test_rss_is_read_from_proc_for_a_live_process_and_refused_for_none() -> None:
    assert 1 < rss_mib(os.getpid()) < 64 * 1024
    with pytest.raises(OSError):
        rss_mib(2**22 + 12345)  # above the kernel's largest pid: no such process
