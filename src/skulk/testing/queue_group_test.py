import threading

import pytest

from skulk.testing.queue_group import run_rank_threads, shared_state


def test_a_failing_rank_releases_the_others_and_is_raised() -> None:
    shared = shared_state(2)
    released: list[int] = []

    def run(rank: int) -> None:
        if rank == 0:
            raise ValueError("rank 0 broke")
        try:
            shared["barrier"].wait()
        except threading.BrokenBarrierError:
            released.append(rank)

    with pytest.raises(AssertionError, match="rank 0 broke"):
        run_rank_threads(2, shared, run, timeout=10.0)
    assert released == [1]


def test_meanwhile_runs_beside_the_ranks_and_its_failure_releases_them() -> None:
    shared = shared_state(3)
    stop = threading.Event()
    seen: list[str] = []

    def run(rank: int) -> None:
        while not stop.is_set():
            try:
                shared["barrier"].wait()
            except threading.BrokenBarrierError:
                return

    def meanwhile() -> None:
        seen.append("ran")
        raise RuntimeError("the test gave up")

    with pytest.raises(RuntimeError, match="gave up"):
        run_rank_threads(3, shared, run, timeout=10.0, meanwhile=meanwhile)
    assert seen == ["ran"]


def test_ranks_still_running_at_the_deadline_fail_the_test_and_are_released() -> None:
    shared = shared_state(2)

    def run(rank: int) -> None:
        if rank == 1:
            try:
                shared["barrier"].wait()  # rank 0 never comes
            except threading.BrokenBarrierError:
                return

    with pytest.raises(AssertionError, match=r"ranks \[1\] did not finish"):
        run_rank_threads(2, shared, run, timeout=0.5)
    assert shared["barrier"].broken
