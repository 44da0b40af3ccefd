"""Waiting, before mlx's ring init, until this rank's two neighbours are up.

mlx's ring backend connects to the next rank with five attempts and exponential backoff
(1 + 2 + 4 + 8 + 16 s, mlx/distributed/utils.cpp), then throws "Couldn't connect". Ranks
are separate runner processes on separate nodes, started when each node hears of the
placement; on a loaded machine one rank can come up more than 31 s after its neighbour,
and the instance was then placed again for nothing. So each rank first meets its
neighbours here, on the ring's own addresses, and enters mlx's init only when both are
up: ranks then reach mlx within moments of each other, and its backoff never runs out.

On hosts[rank] this rank listens for its left neighbour's probe; it connects to its right
neighbour at hosts[rank + 1] until that one answers. A probe carries the ring's digest;
the answer is sent only after the listener is closed, so once a rank has its answer, its
right neighbour's port is free for mlx's own listener, and mlx's connect can never land
in this rendezvous's backlog. A rank that meets neither in time raises
GroupConnectTimeout naming the neighbour that never came.
"""

import hashlib
import socket
import threading
import time
from collections.abc import Sequence
from ipaddress import ip_address

from skulk.worker.engines.mlx.ring import (
    GroupConnectTimeout,
    GroupError,
    check_ring_shape,
    parse_host,
)

ANSWER = b"ok\n"
RETRY_SECONDS = 0.1  # between connects to a right neighbour not yet listening
READ_SECONDS = 2.0  # the most a probe or its answer takes on an open connection


def ring_digest(hosts: Sequence[str]) -> str:
    """Names one ring: a probe from another ring's rank on the same port is not answered."""
    return hashlib.sha256("\n".join(hosts).encode()).hexdigest()[:16]


def probe_line(rank: int, hosts: Sequence[str]) -> bytes:
    return f"skulk-ring {ring_digest(hosts)} {rank}\n".encode()


def _family(address: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ip_address(address).version == 6 else socket.AF_INET


def _read_line(connection: socket.socket, limit: int = 128) -> bytes:
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = connection.recv(limit - len(data))
        if not chunk:
            break
        data += chunk
    return data


class _LeftListener:
    """Accepts probes on this rank's address until the left neighbour's has come, then
    closes the listener and answers it."""

    def __init__(self, rank: int, hosts: Sequence[str]) -> None:
        address, port = parse_host(hosts[rank])
        self._expected = probe_line((rank - 1) % len(hosts), hosts)
        self._listener = socket.socket(_family(address), socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind((address, port))
        except OSError as error:
            self._listener.close()
            raise GroupError(f"rank {rank} cannot listen on {hosts[rank]}: {error}") from error
        self._listener.listen(8)
        self._listener.settimeout(RETRY_SECONDS)
        self.met = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="ring-rendezvous",
                                        daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    connection, _ = self._listener.accept()
                except TimeoutError:
                    continue
                with connection:
                    connection.settimeout(READ_SECONDS)
                    try:
                        if _read_line(connection) != self._expected:
                            continue  # not our left neighbour: another ring, or a stray
                        self._listener.close()
                        connection.sendall(ANSWER)
                    except OSError:
                        continue
                    self.met.set()
                    return
        finally:
            self._listener.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _reach_right(rank: int, hosts: Sequence[str], deadline: float) -> bool:
    """Probe the next rank until it answers; False once `deadline` (monotonic) passed."""
    address, port = parse_host(hosts[(rank + 1) % len(hosts)])
    line = probe_line(rank, hosts)
    while time.monotonic() < deadline:
        try:
            with socket.socket(_family(address), socket.SOCK_STREAM) as connection:
                connection.settimeout(READ_SECONDS)
                connection.connect((address, port))
                connection.sendall(line)
                if _read_line(connection) == ANSWER:
                    return True
        except OSError:
            pass  # not listening yet, or it went away mid-probe: try again
        time.sleep(RETRY_SECONDS)
    return False


def await_neighbours(rank: int, hosts: Sequence[str], deadline_seconds: float) -> float:
    """Block until the left neighbour has probed this rank and the right one has answered;
    the seconds it took. GroupConnectTimeout past `deadline_seconds`."""
    check_ring_shape(rank, hosts, deadline_seconds)
    started = time.monotonic()
    deadline = started + deadline_seconds
    left = _LeftListener(rank, hosts)
    try:
        right_met = _reach_right(rank, hosts, deadline)
        left_met = left.met.wait(max(0.0, deadline - time.monotonic()))
    finally:
        left.close()
    size = len(hosts)
    if not right_met:
        raise GroupConnectTimeout(
            f"rank {rank}: rank {(rank + 1) % size} at {hosts[(rank + 1) % size]} did not "
            f"answer within {deadline_seconds:g} s (its node never started it, or it died)")
    if not left_met:
        raise GroupConnectTimeout(
            f"rank {rank}: rank {(rank - 1) % size} at {hosts[(rank - 1) % size]} did not "
            f"reach {hosts[rank]} within {deadline_seconds:g} s")
    return time.monotonic() - started
