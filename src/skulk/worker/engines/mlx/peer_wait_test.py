"""Finding a ring's sockets by their addresses, and waiting on them without spinning."""

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skulk.worker.engines.mlx.peer_wait import (
    PeerWait,
    parse_proc_address,
    ring_descriptors,
    tcp_connections,
)


def test_proc_addresses_parse_as_little_endian_words() -> None:
    assert parse_proc_address("0100007F:CD2A") == ("127.0.0.1", 0xCD2A)
    assert parse_proc_address("00000000000000000000000001000000:0050") == ("::1", 80)
    mapped = "0000000000000000FFFF00000100007F:1F90"
    assert parse_proc_address(mapped) == ("127.0.0.1", 8080)


Ring = tuple[list[str], socket.socket, socket.socket, socket.socket]


@pytest.fixture
def two_ranks() -> Iterator[Ring]:
    """Rank 0's view of a 2-rank ring on 127.0.0.1: `accepted` came in on its own
    address from rank 1, `outgoing` goes to rank 1's; `far` is rank 1's end of `outgoing`."""
    own, theirs = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    hosts = [f"127.0.0.1:{own.getsockname()[1]}", f"127.0.0.1:{theirs.getsockname()[1]}"]
    incoming = socket.create_connection(own.getsockname())
    accepted, _ = own.accept()
    outgoing = socket.create_connection(theirs.getsockname())
    far, _ = theirs.accept()
    own.close()
    theirs.close()
    try:
        yield hosts, accepted, outgoing, far
    finally:
        for sock in (incoming, accepted, outgoing, far):
            sock.close()


def test_the_ring_sockets_are_found_by_address(two_ranks: Ring) -> None:
    hosts, accepted, outgoing, _ = two_ranks
    found = ring_descriptors(0, hosts, tcp_connections())
    # Rank 1's sockets live in this process too here, but they are not rank 0's ring ends.
    assert sorted(found) == sorted([accepted.fileno(), outgoing.fileno()])


def test_waiting_returns_when_a_peer_sends_and_times_out_otherwise(two_ranks: Ring) -> None:
    hosts, accepted, outgoing, far = two_ranks
    waiter = PeerWait.find(0, hosts)
    assert waiter is not None
    started = time.monotonic()
    assert not waiter.wait(0.05)
    assert time.monotonic() - started >= 0.04
    far.sendall(b"token")  # rank 1 answers on rank 0's outgoing connection
    assert waiter.wait(5.0)
    assert outgoing.recv(16) == b"token"  # the wait left the data for the reader
    assert accepted.getblocking() and outgoing.getblocking()  # flags untouched


def test_no_ring_no_waiting() -> None:
    assert PeerWait.find(0, ["127.0.0.1:9", "127.0.0.1:10"]) is None


def test_without_proc_nothing_is_found(tmp_path: Path) -> None:
    hosts = ["127.0.0.1:9", "127.0.0.1:10"]
    assert tcp_connections(tmp_path / "net") == {}
    assert ring_descriptors(0, hosts, {}, fd_dir=tmp_path / "fd") == []
