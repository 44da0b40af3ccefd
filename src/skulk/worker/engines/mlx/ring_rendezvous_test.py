import socket
import threading
import time
from collections.abc import Callable, Sequence

import pytest

from skulk.testing.ports import free_port
from skulk.worker.engines.mlx.ring import GroupConnectTimeout, GroupError, parse_host
from skulk.worker.engines.mlx.ring_rendezvous import await_neighbours, probe_line


def free_hosts(count: int) -> list[str]:
    hosts: list[str] = []
    while len(hosts) < count:
        host = f"127.0.0.1:{free_port()}"
        if host not in hosts:
            hosts.append(host)
    return hosts


def run_ranks(hosts: Sequence[str], delays: Sequence[float], deadline: float,
              before: Callable[[int], None] = lambda rank: None
              ) -> dict[int, float | BaseException]:
    """Each rank in its own thread, starting after its delay; what each returned or raised."""
    results: dict[int, float | BaseException] = {}

    def rank_thread(rank: int) -> None:
        time.sleep(delays[rank])
        before(rank)
        try:
            results[rank] = await_neighbours(rank, hosts, deadline)
        except BaseException as error:  # noqa: BLE001 - reported to the test
            results[rank] = error

    threads = [threading.Thread(target=rank_thread, args=(rank,)) for rank in range(len(hosts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(deadline + 10)
    return results


def test_ranks_started_apart_all_meet_once_the_last_is_up() -> None:
    hosts = free_hosts(3)
    results = run_ranks(hosts, delays=[0.0, 1.0, 0.3], deadline=20.0)
    assert sorted(results) == [0, 1, 2]
    assert all(isinstance(value, float) for value in results.values()), results
    # Rank 0 started first and waited for rank 1, a second later.
    assert isinstance(results[0], float) and results[0] >= 0.8


def test_two_ranks_meet_each_other_on_both_sides() -> None:
    hosts = free_hosts(2)
    results = run_ranks(hosts, delays=[0.5, 0.0], deadline=20.0)
    assert all(isinstance(value, float) for value in results.values()), results


def test_a_neighbour_that_never_comes_is_named_at_the_deadline() -> None:
    hosts = free_hosts(3)
    started = time.monotonic()
    with pytest.raises(GroupConnectTimeout, match=r"rank 1: rank 2 at .* did not answer "
                                                  r"within 0.5 s"):
        await_neighbours(1, hosts, 0.5)
    assert time.monotonic() - started < 5.0


def test_after_meeting_the_port_is_free_for_mlx_to_listen_on() -> None:
    hosts = free_hosts(2)
    results = run_ranks(hosts, delays=[0.0, 0.0], deadline=20.0)
    assert all(isinstance(value, float) for value in results.values()), results
    for host in hosts:
        with socket.socket() as listener:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(parse_host(host))
            listener.listen(1)


def test_a_stray_or_another_rings_probe_is_not_taken_for_the_neighbour() -> None:
    hosts = free_hosts(2)
    other_ring = ["127.0.0.1:1", hosts[1]]
    strays: list[bytes] = []

    def knock_first(rank: int) -> None:
        if rank != 0:
            return
        # Rank 0 knocks on rank 1's door with a junk line and with another ring's probe
        # before rank 1 meets it; neither may be answered.
        for line in (b"GET / HTTP/1.0\r\n\r\n", probe_line(0, other_ring)):
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                try:
                    with socket.create_connection(parse_host(hosts[1]), timeout=1.0) as knock:
                        knock.sendall(line)
                        strays.append(knock.recv(16))
                        break
                except OSError:
                    time.sleep(0.05)

    results = run_ranks(hosts, delays=[0.0, 0.0], deadline=20.0, before=knock_first)
    assert all(isinstance(value, float) for value in results.values()), results
    assert strays == [b"", b""]


@pytest.mark.parametrize(("rank", "hosts"), [
    (2, ["127.0.0.1:1", "127.0.0.1:2"]),
    (0, ["127.0.0.1:1"]),
    (0, ["127.0.0.1:1", "localhost:2"]),
])
def test_impossible_rings_are_refused_before_listening(rank: int, hosts: list[str]) -> None:
    with pytest.raises(GroupError):
        await_neighbours(rank, hosts, 1.0)
