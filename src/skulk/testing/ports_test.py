import socket
from collections import deque

import pytest

from skulk.testing.ports import REMEMBERED, TEST_PORTS, free_port, port_range


def test_outside_xdist_a_test_picks_from_the_whole_range() -> None:
    assert port_range(None, None) == TEST_PORTS
    assert port_range("master", None) == TEST_PORTS


def test_xdist_workers_and_their_replacements_get_disjoint_slices_of_the_range() -> None:
    # gw4-gw7: workers xdist starts in place of crashed ones, beside the live ones.
    slices = [port_range(f"gw{index}", "4") for index in range(8)]
    for index, ports in enumerate(slices):
        assert len(ports) == len(TEST_PORTS) // 8
        assert TEST_PORTS.start <= ports.start and ports.stop <= TEST_PORTS.stop
        for other in slices[index + 1:]:
            assert set(ports).isdisjoint(other)


def test_replacements_past_the_spares_wrap_round_inside_the_range() -> None:
    assert port_range("gw8", "4") == port_range("gw0", "4")
    assert port_range("gw13", "4") == port_range("gw5", "4")


def test_a_free_port_is_in_this_workers_slice_and_bindable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    port = free_port()
    assert port in port_range("gw2", "3")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_ports_handed_out_but_not_yet_bound_are_not_handed_out_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A slice of 100 ports: 60 picks without a bind between them would repeat one
    # more often than not by chance (the birthday bound), and must not.
    monkeypatch.setattr("skulk.testing.ports.TEST_PORTS", range(20000, 20100))
    monkeypatch.setattr("skulk.testing.ports._handed_out", deque(maxlen=REMEMBERED))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    picks = [free_port() for _ in range(60)]
    assert len(set(picks)) == len(picks)
