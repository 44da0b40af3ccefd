"""The llama-server comparison's bookkeeping: the rotation gives every entry (the engine
alone included) each place in turn, the noise line says how many rounds resolve a gap,
and server_threads reads per-thread CPU and switches from /proc as they are."""

import os
import sys
import threading
import time
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.llama_server_compare import rotated  # noqa: E402
from bench.llama_server_figures import ENGINE_ALONE, SERVERS, noise  # noqa: E402
from bench.server_threads import per_token, read_threads  # noqa: E402


def test_every_entry_takes_every_place_once_in_as_many_rounds_as_entries() -> None:
    entries = SERVERS + (ENGINE_ALONE,)
    orders = [rotated(entries, round_) for round_ in range(len(entries))]
    for place in range(len(entries)):
        assert sorted(order[place] for order in orders) == sorted(entries)
    assert orders[0][-1] == ENGINE_ALONE and orders[1][-1] != ENGINE_ALONE


def test_noise_gives_the_rounds_that_put_the_gap_two_standard_errors_clear() -> None:
    # mean 0.93, sd 0.081: (2 * 0.081 / 0.07)^2 = 5.4, so 6 rounds
    sd, rounds = noise([0.88, 0.92, 0.87, 0.91, 1.07])
    assert sd == pytest.approx(0.0809, abs=1e-3)
    assert rounds == 6
    # a wide spread around a small gap needs many rounds; never fewer than were run
    wide = noise([0.8, 1.2, 0.9, 1.1, 0.98])[1]  # gap 0.004, sd 0.16: ~6,300 rounds
    assert wide is not None and wide > 1000
    assert noise([0.5, 0.6, 0.55])[1] == 3
    assert noise([1.0]) == (0.0, None)
    assert noise([1.0, 1.0])[1] is None


def test_server_threads_charges_a_busy_thread_its_cpu_per_token() -> None:
    spent, done = threading.Event(), threading.Event()

    def spin() -> None:  # 0.1 s of this thread's own CPU, however loaded the machine
        while time.thread_time() < 0.1:
            pass
        spent.set()
        done.wait(30)

    busy = threading.Thread(target=spin)
    before = read_threads(os.getpid())
    busy.start()
    try:
        assert spent.wait(60)
        after = read_threads(os.getpid())
    finally:
        done.set()
        busy.join()
    rows = per_token(before, after, tokens=10)
    row = next(row for row in rows if str(row["thread"]).endswith(f"/{busy.native_id}"))
    assert 10.0 <= float(row["cpu_ms"]) < 20.0  # 0.1 s over 10 tokens, plus its start
    assert float(row["wait_ms"]) >= 0 and float(row["involuntary"]) >= 0
    assert rows[0] is row  # busiest first: nothing else here spun for 0.1 s since
