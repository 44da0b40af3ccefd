from skulk.worker.runner.flight_recorder import FlightRecorder


def _recorder(head: int, tail: int) -> FlightRecorder:
    ticks = iter(range(1000))
    return FlightRecorder(head_capacity=head, tail_capacity=tail,
                          clock=lambda: float(next(ticks)))


def test_the_recorder_keeps_the_first_and_the_newest_entries_in_order() -> None:
    recorder = _recorder(head=2, tail=3)
    recorder.record("spawned")
    for n in range(1, 8):
        recorder.record("status", f"s{n}")
    assert [(e["at"], e["what"], e["detail"]) for e in recorder.entries()] == [
        (0.0, "spawned", ""), (1.0, "status", "s1"),
        (5.0, "status", "s5"), (6.0, "status", "s6"), (7.0, "status", "s7")]
    assert recorder.dropped == 3


def test_a_quiet_runner_loses_nothing() -> None:
    recorder = _recorder(head=2, tail=3)
    for n in range(4):
        recorder.record("status", f"s{n}")
    assert [e["detail"] for e in recorder.entries()] == ["s0", "s1", "s2", "s3"]
    assert recorder.dropped == 0
