"""Free TCP ports on 127.0.0.1 for tests that start servers.

Chosen below every common ephemeral range (Linux 32768-60999) and below the ring ports
(31000-31999): a port the kernel hands out (bind to 0) may be handed again to some
outgoing connection before the server that was meant to get it binds, and CI saw a node
fail to start that way ("the API port ... is already in use").

Under pytest-xdist each worker takes its own slice of the range (keyed on
`PYTEST_XDIST_WORKER`, `gw0`, `gw1`, ...), so two workers never pick the same port between
one's check and its server's bind. The range is cut in twice as many slices as workers: a
worker xdist starts in place of a crashed one counts on (`gw4` of 4) and takes a spare
slice. Processes a test starts inherit the variable and keep to their test's slice.

Within one process a port is not handed out twice in a row of `REMEMBERED` picks: a
fixture that makes three nodes before starting any (six ports, none bound yet) once got
the same port twice, and the second node found its transport port taken by the first.
"""

import os
import random
import socket
from collections import deque

TEST_PORTS = range(20000, 31000)
REMEMBERED = 512
_RANDOM = random.SystemRandom()  # untouched by tests that seed `random`
_handed_out: deque[int] = deque(maxlen=REMEMBERED)


def port_range(worker: str | None, worker_count: str | None) -> range:
    """The ports one xdist worker picks from: the whole range outside xdist, else one of
    `2 * count` equal slices (a replacement's index wraps round after the spares)."""
    if not worker or not worker_count or not worker.startswith("gw"):
        return TEST_PORTS
    slices = 2 * int(worker_count)
    index = int(worker.removeprefix("gw")) % slices
    size = len(TEST_PORTS) // slices
    start = TEST_PORTS.start + index * size
    return range(start, start + size)


def this_workers_ports() -> range:
    return port_range(os.environ.get("PYTEST_XDIST_WORKER"),
                      os.environ.get("PYTEST_XDIST_WORKER_COUNT"))


def free_port() -> int:
    """A port nothing listens on now, from a range outgoing connections never take (and,
    under xdist, no other worker takes), and not one of this process's recent picks."""
    ports = this_workers_ports()
    for _ in range(200):
        port = _RANDOM.choice(ports)
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.append(port)
        return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1} after 200 tries")
