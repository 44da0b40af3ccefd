"""The batch's logits check: any NaN or infinity anywhere in the row fails it."""

import numpy as np
import pytest

from skulk.worker.engines.llama_cpp.continuous_batch import all_finite


def test_finite_logits_pass_even_at_float32_extremes() -> None:
    row = np.linspace(-3e38, 3e38, 49152, dtype=np.float32)
    assert all_finite(row)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("at", [0, 1000, 49151])
def test_one_nan_or_infinity_anywhere_fails_the_row(bad: float, at: int) -> None:
    row = np.zeros(49152, dtype=np.float32)
    row[at] = bad
    assert not all_finite(row)
    assert all_finite(row) == bool(np.isfinite(row).all())
    # Greedy hands in the index argmax found: it points at a NaN if there is one.
    assert not all_finite(row, int(row.argmax()))


def test_greedys_highest_index_passes_a_finite_row() -> None:
    row = np.linspace(-5.0, 5.0, 49152, dtype=np.float32)
    assert all_finite(row, int(row.argmax()))
