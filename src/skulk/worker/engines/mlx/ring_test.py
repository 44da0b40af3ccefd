import json
import threading
import time
from pathlib import Path

import pytest

from skulk.worker.engines.mlx.ring import (
    CollectiveTimeout,
    DeadlineWatchdog,
    GroupError,
    hostfile_document,
    init_ring,
    parse_host,
    ring_environment,
    write_hostfile,
)


def test_hostfile_lists_one_address_list_per_rank(tmp_path: Path) -> None:
    hosts = ["127.0.0.1:5000", "[::1]:5001"]
    path = write_hostfile(tmp_path, hosts)
    assert json.loads(path.read_text()) == [["127.0.0.1:5000"], ["[::1]:5001"]]
    assert ring_environment(path, 1) == {"MLX_HOSTFILE": str(path), "MLX_RANK": "1"}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost:80", "10.0.0.1:0", "1.2.3.4:x"])
def test_malformed_hosts_are_refused(host: str) -> None:
    with pytest.raises(GroupError, match="ring host"):
        hostfile_document(["127.0.0.1:5000", host])


def test_hosts_parse_to_address_and_port() -> None:
    assert parse_host("192.168.1.2:52416") == ("192.168.1.2", 52416)
    assert parse_host("[fe80::1]:7") == ("fe80::1", 7)


@pytest.mark.parametrize(("rank", "hosts", "message"), [
    (2, ["127.0.0.1:1", "127.0.0.1:2"], "outside a ring"),
    (0, ["127.0.0.1:1"], "at least two hosts"),
])
def test_impossible_rings_are_refused_before_connecting(
    rank: int, hosts: list[str], message: str
) -> None:
    with pytest.raises(GroupError, match=message):
        init_ring(rank, hosts, deadline_seconds=1.0)


def test_a_section_within_its_deadline_passes_quietly() -> None:
    expired: list[str] = []
    watchdog = DeadlineWatchdog(on_expire=expired.append)
    for _ in range(100):
        with watchdog.guard(5.0, "all_sum"):
            pass
    time.sleep(0.05)
    assert expired == []


def test_an_overrun_calls_the_expiry_at_the_deadline_and_raises() -> None:
    fired = threading.Event()
    messages: list[str] = []

    def on_expire(message: str) -> None:
        messages.append(message)
        fired.set()

    watchdog = DeadlineWatchdog(on_expire=on_expire)
    started = time.monotonic()
    with pytest.raises(CollectiveTimeout, match="recv from rank 0 overran its 0.2 s"):
        with watchdog.guard(0.2, "recv from rank 0"):
            # The body is still "stuck" when the deadline passes: expiry fires during it.
            assert fired.wait(5.0)
    assert 0.15 <= time.monotonic() - started < 2.0
    assert messages and "recv from rank 0" in messages[0]
    # The watchdog can be armed again after an expiry.
    with watchdog.guard(5.0, "send"):
        pass


def test_guards_do_not_nest() -> None:
    watchdog = DeadlineWatchdog(on_expire=lambda message: None)
    with watchdog.guard(5.0, "outer"):
        with pytest.raises(RuntimeError, match="already armed for outer"):
            with watchdog.guard(5.0, "inner"):
                pass


def test_a_short_deadline_after_a_long_one_still_fires_on_time() -> None:
    fired = threading.Event()
    watchdog = DeadlineWatchdog(on_expire=lambda message: fired.set())
    with watchdog.guard(30.0, "a long prefill hop"):
        pass
    started = time.monotonic()
    with pytest.raises(CollectiveTimeout):
        with watchdog.guard(0.2, "a token broadcast"):
            assert fired.wait(5.0)
    assert time.monotonic() - started < 2.0
