from skulk.fitting.decode_probe import layer_seconds, measure


def test_the_probe_measures_a_read_rate_per_width_and_a_cost_per_layer() -> None:
    calibration = measure(widths=(64, 256), probe_bytes=2**20)
    rates = calibration.rates()
    assert sorted(rates) == [64, 256]
    # From a slow board to a workstation's cache (these small probes fit in caches).
    assert all(1e7 < rate < 1e12 for rate in rates.values())
    assert 0 <= calibration.layer_seconds < 0.1


def test_a_layer_costs_something() -> None:
    assert layer_seconds() > 0
