from skulk.worker.engines.mlx.hop_log import HopLog


def test_a_request_gets_the_hops_made_since_it_joined() -> None:
    now = iter([15, 35, 60])
    log = HopLog(clock=lambda: next(now))
    log.note("pipeline.recv", 10)
    log.note("pipeline.send", 30)
    log.note("pipeline.recv", 50)
    assert [(s.name, s.start_us, s.duration_us) for s in log.spans_since(30)] == [
        ("pipeline.send", 30, 5), ("pipeline.recv", 50, 10)]


def test_only_the_newest_hops_are_kept() -> None:
    log = HopLog(capacity=2, clock=lambda: 100)
    for start in (1, 2, 3):
        log.note("pipeline.send", start)
    assert [s.start_us for s in log.spans_since(0)] == [2, 3]
