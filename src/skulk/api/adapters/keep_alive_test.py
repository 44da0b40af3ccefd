import math

import pytest

from skulk.api.adapters.keep_alive import keep_alive_seconds
from skulk.api.errors import ApiError


def test_ollama_durations_numbers_and_for_ever() -> None:
    assert keep_alive_seconds(None) is None
    assert keep_alive_seconds("5m") == 300.0 and keep_alive_seconds("1h30m") == 5400.0
    assert keep_alive_seconds("250ms") == 0.25 and keep_alive_seconds(" 90 ") == 90.0
    assert keep_alive_seconds(0) == 0.0 and keep_alive_seconds("0") == 0.0
    assert keep_alive_seconds(-1) == -1.0 and keep_alive_seconds("-5m") == -1.0
    assert keep_alive_seconds(10**12) == 365 * 24 * 3600.0  # capped, not refused


@pytest.mark.parametrize("bad", ["soon", "5 minutes", "m5", "", "1d", "5m junk"])
def test_anything_else_is_a_400_naming_the_field(bad: str) -> None:
    with pytest.raises(ApiError) as raised:
        keep_alive_seconds(bad)
    assert raised.value.status == 400 and raised.value.param == "keep_alive"


def test_infinite_or_nan_numbers_are_refused() -> None:
    for bad in (math.inf, math.nan):
        with pytest.raises(ApiError):
            keep_alive_seconds(bad)
