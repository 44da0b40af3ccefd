"""Free TCP ports on 127.0.0.1 for tests that start servers.

Chosen below every common ephemeral range (Linux 32768-60999) and below the ring ports
(31000-31999): a port the kernel hands out (bind to 0) may be handed again to some
outgoing connection before the server that was meant to get it binds, and CI saw a node
fail to start that way ("the API port ... is already in use").
"""

import random
import socket

_RANGE = range(20000, 31000)
_RANDOM = random.SystemRandom()  # untouched by tests that seed `random`


def free_port() -> int:
    """A port nothing listens on now, from a range outgoing connections never take."""
    for _ in range(200):
        port = _RANDOM.choice(_RANGE)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_RANGE.start}-{_RANGE.stop - 1} after 200 tries")
