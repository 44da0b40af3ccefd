from skulk.worker.runner.crash_window import CrashWindow


def test_three_failures_within_the_window_trip_it() -> None:
    window = CrashWindow()
    assert not window.record(0.0)
    assert not window.record(10.0)
    assert window.record(59.0)


def test_failures_spread_over_time_do_not() -> None:
    window = CrashWindow()
    assert not window.record(0.0)
    assert not window.record(40.0)
    assert not window.record(80.0)
    assert not window.record(130.0)
