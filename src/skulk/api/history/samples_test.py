import pytest

from skulk.api.history.samples import RequestCounts, quantile
from skulk.api.metrics import LATENCY_BUCKETS


def counts_in(*bucket_counts: tuple[int, int]) -> tuple[int, ...]:
    """Per-bucket counts with `count` observations in bucket `index`."""
    buckets = [0] * (len(LATENCY_BUCKETS) + 1)
    for index, count in bucket_counts:
        buckets[index] = count
    return tuple(buckets)


def test_quantile_interpolates_within_its_bucket_as_prometheus_does() -> None:
    # 10 observations in (0.1, 0.25]: the median is halfway through that bucket.
    buckets = counts_in((LATENCY_BUCKETS.index(0.25), 10))
    assert quantile(buckets, 0.5) == pytest.approx(0.175)
    assert quantile(buckets, 0.95) == pytest.approx(0.1 + 0.15 * 0.95)


def test_quantile_of_two_buckets_and_of_none() -> None:
    buckets = counts_in((0, 9), (LATENCY_BUCKETS.index(1.0), 1))
    # Rank 5 of 10, with 9 in the first bucket.
    assert quantile(buckets, 0.5) == pytest.approx(0.005 * 5 / 9)
    assert 0.5 < (quantile(buckets, 0.95) or 0) <= 1.0
    assert quantile(counts_in(), 0.5) is None
    # Beyond the last bound: the last bound, as histogram_quantile says.
    assert quantile(counts_in((len(LATENCY_BUCKETS), 3)), 0.5) == LATENCY_BUCKETS[-1]


def test_request_counts_add_up() -> None:
    one = RequestCounts(tokens=5, generations=1, first_token_buckets=counts_in((2, 1)))
    two = RequestCounts(tokens=7, generations=2, first_token_buckets=counts_in((2, 1), (4, 1)))
    total = one + two
    assert (total.tokens, total.generations) == (12, 3)
    assert total.first_token_buckets == counts_in((2, 2), (4, 1))
