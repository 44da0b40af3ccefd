"""The native greedy read (`skulk._native.greedy_token`, rust/logits) against numpy's
argmax and finiteness check, on rows the size of this model's vocabulary."""

import numpy as np
import pytest

from skulk._native import greedy_token


def pick(row: np.ndarray) -> int | None:
    return greedy_token(row.ctypes.data, len(row))


def test_the_first_highest_is_numpys_argmax() -> None:
    rows = np.random.default_rng(7).normal(size=(50, 49_152)).astype(np.float32)
    for row in rows:
        assert pick(row) == int(row.argmax())


def test_a_tie_goes_to_the_first_and_finite_extremes_pass() -> None:
    row = np.full(49_152, np.finfo(np.float32).min, dtype=np.float32)
    row[[30_001, 30_002]] = np.finfo(np.float32).max
    assert pick(row) == 30_001


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("at", [0, 15, 16, 49_151])
def test_a_nan_or_an_infinity_anywhere_gives_no_token(bad: float, at: int) -> None:
    row = np.zeros(49_152, dtype=np.float32)
    row[at] = bad
    assert pick(row) is None


def test_no_row_is_refused_with_why() -> None:
    with pytest.raises(ValueError, match="no row of logits"):
        greedy_token(0, 10)
    with pytest.raises(ValueError, match="no row of logits"):
        greedy_token(np.zeros(4, dtype=np.float32).ctypes.data, 0)
