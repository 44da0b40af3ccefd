"""The llama-server comparison's bookkeeping: the turns give every entry (the engine
alone included) each place equally often, item by item and round by round, a server's CPU
meter counts its own turns only, the noise line says how many rounds resolve a gap, and
server_threads reads per-thread CPU and switches from /proc as they are."""

import os
import sys
import threading
import time
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.llama_server_figures import ENGINE_ALONE, SERVERS, noise  # noqa: E402
from bench.server_threads import per_token, read_threads  # noqa: E402
from bench.server_turns import CpuMeter, turn_order  # noqa: E402


def test_every_entry_takes_every_place_once_over_a_rounds_items() -> None:
    entries = SERVERS + (ENGINE_ALONE,)
    for round_ in range(3):
        orders = [turn_order(entries, round_, item) for item in range(len(entries))]
        for place in range(len(entries)):
            assert sorted(order[place] for order in orders) == sorted(entries)
        assert all(sorted(order) == sorted(entries) for order in orders)


def test_one_items_order_rotates_from_round_to_round() -> None:
    # An aggregate row: the three servers, each first, second and third in three rounds.
    orders = [turn_order(SERVERS, round_, item=2) for round_ in range(len(SERVERS))]
    for place in range(len(SERVERS)):
        assert sorted(order[place] for order in orders) == sorted(SERVERS)
    assert turn_order(SERVERS, 0, 0) == SERVERS
    assert turn_order(SERVERS, 1, 0) == turn_order(SERVERS, 0, 1) != SERVERS


def spin(seconds: float) -> None:
    """`seconds` of this thread's own CPU, however loaded the machine."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_the_cpu_meter_sums_its_measured_spans_only_and_clears_on_reading() -> None:
    meter = CpuMeter({"client": os.getpid()})
    with meter.measuring():
        spin(0.2)
    spin(0.4)  # another server's turn: not this meter's
    with meter.measuring():
        spin(0.2)
    # 0.4 s over 100 tokens, read in clock ticks (10 ms each, so 0.2 ms a token here);
    # the unmeasured 0.4 s would make it 8
    assert 3.7 <= meter.per_token(tokens=100)["client"] < 5.5
    assert meter.per_token(tokens=100)["client"] < 0.5


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
