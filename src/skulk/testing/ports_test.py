import socket

import pytest

from skulk.testing.ports import TEST_PORTS, free_port, port_range


def test_outside_xdist_a_test_picks_from_the_whole_range() -> None:
    assert port_range(None, None) == TEST_PORTS
    assert port_range("master", None) == TEST_PORTS


def test_xdist_workers_get_disjoint_slices_of_the_range() -> None:
    slices = [port_range(f"gw{index}", "4") for index in range(4)]
    for index, ports in enumerate(slices):
        assert len(ports) == len(TEST_PORTS) // 4
        assert TEST_PORTS.start <= ports.start and ports.stop <= TEST_PORTS.stop
        for other in slices[index + 1:]:
            assert set(ports).isdisjoint(other)


def test_a_worker_outside_its_count_is_refused() -> None:
    with pytest.raises(ValueError, match="gw4"):
        port_range("gw4", "4")


def test_a_free_port_is_in_this_workers_slice_and_bindable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    port = free_port()
    assert port in port_range("gw2", "3")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
