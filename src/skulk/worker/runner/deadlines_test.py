from skulk.shared.types.runners import RunnerLoading, RunnerReady, RunnerWarmingUp
from skulk.worker.runner.deadlines import RunnerDeadlines, overdue

DEADLINES = RunnerDeadlines(first_report_seconds=10.0, load_base_seconds=30.0,
                            load_bytes_per_second=1e6)


def test_a_runner_that_never_reports_is_overdue_after_the_first_report_deadline() -> None:
    assert overdue(None, started_at=0.0, load_asked_at=None, now=9.0, weights_bytes=0,
                   deadlines=DEADLINES) is None
    why = overdue(None, started_at=0.0, load_asked_at=None, now=11.0, weights_bytes=0,
                  deadlines=DEADLINES)
    assert why is not None and "did not report within 10 s" in why


def test_the_load_deadline_scales_with_the_weights_and_counts_from_the_load_request(
        ) -> None:
    # 30 s base + 50 MB at 1 MB/s = 80 s from the load request.
    assert overdue(RunnerLoading(), started_at=0.0, load_asked_at=5.0, now=84.0,
                   weights_bytes=50_000_000, deadlines=DEADLINES) is None
    why = overdue(RunnerWarmingUp(), started_at=0.0, load_asked_at=5.0, now=86.0,
                  weights_bytes=50_000_000, deadlines=DEADLINES)
    assert why is not None and "within 80 s" in why and "warming_up" in why


def test_a_serving_runner_or_one_not_asked_to_load_is_never_overdue() -> None:
    assert overdue(RunnerReady(), started_at=0.0, load_asked_at=0.0, now=1e9,
                   weights_bytes=0, deadlines=DEADLINES) is None
    assert overdue(RunnerLoading(), started_at=0.0, load_asked_at=None, now=1e9,
                   weights_bytes=0, deadlines=DEADLINES) is None


def test_a_running_request_gets_a_first_token_deadline_then_a_stall_deadline() -> None:
    from skulk.worker.runner.deadlines import Progress, stalled
    deadlines = RunnerDeadlines(first_token_seconds=20.0, stall_seconds=5.0)
    assert stalled(None, now=1000.0, deadlines=deadlines) is None  # nothing in flight
    waiting = Progress(quiet_since=100.0, produced=False)
    assert stalled(waiting, now=119.0, deadlines=deadlines) is None
    assert "no first token within 20 s" in (stalled(waiting, 121.0, deadlines) or "")
    streaming = Progress(quiet_since=100.0, produced=True)
    assert stalled(streaming, now=104.0, deadlines=deadlines) is None
    assert "no progress for 6 s" in (stalled(streaming, 106.0, deadlines) or "")


def test_runner_deadline_scales_the_running_deadlines_too() -> None:
    scaled = RunnerDeadlines.scaled(8.0)
    assert (scaled.first_token_seconds, scaled.stall_seconds) == (8.0, 8.0)
    assert RunnerDeadlines.scaled(None).stall_seconds < 60.0  # before the API's idle timeout
