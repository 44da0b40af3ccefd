"""Waiting for a ring peer's data in poll(2) rather than in mlx's spin.

mlx's ring backend waits for a peer by calling a non-blocking recv in a loop on its
socket thread, so a rank that waits for the previous rank's compute burns its own core
meanwhile (measured on the bundled model split in two: 40-70 ms of CPU per token per
rank, the waiting rank's whole core), and on a busy machine the spinning thread, once
preempted, notices the data late. Before an op whose data a peer sends without waiting
for this rank (a receive; the deciding rank's all_sum, on the other ranks), a rank blocks
in poll(2) on the ring's sockets until one is readable, then enters mlx's op, which finds
the data there. Never before an op every rank enters waiting for the others (the
agreement): each would wait for a send that only comes after the wait.

The ring's sockets are found among the process's descriptors by their addresses, read
from /proc/net (no socket option or flag of mlx's descriptors is touched). When they are
not found (another platform, another backend), waiting is a no-op and mlx spins as before.
"""

import os
import select
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import ip_address
from pathlib import Path

from skulk.worker.engines.mlx.ring import parse_host

Address = tuple[str, int]  # normalised ip, port

# A decode step's wait is a fraction of this; a longer one (a peer's long prefill) spins.
MAX_POLL_SECONDS = 2.0


def parse_proc_address(text: str) -> Address:
    """An address of /proc/net/tcp or tcp6 ("0100007F:CD2A": little-endian words, hex port)."""
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    # Each 32-bit word is in host order (little-endian here).
    swapped = b"".join(raw[i: i + 4][::-1] for i in range(0, len(raw), 4))
    address = ip_address(swapped)
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(port, 16)


def tcp_connections(proc_net: Path = Path("/proc/net")) -> dict[int, tuple[Address, Address]]:
    """Every TCP socket of this network namespace: inode -> (local, remote)."""
    found: dict[int, tuple[Address, Address]] = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = (proc_net / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            found[int(fields[9])] = (parse_proc_address(fields[1]),
                                     parse_proc_address(fields[2]))
    return found


def ring_descriptors(rank: int, hosts: Sequence[str],
                     connections: dict[int, tuple[Address, Address]],
                     fd_dir: Path = Path("/proc/self/fd")) -> list[int]:
    """This process's descriptors of the ring's sockets: those accepted on its own
    address (from the left neighbour) and those connected to the right neighbour's."""
    def normal(host: str) -> Address:
        ip, port = parse_host(host)
        return str(ip_address(ip)), port

    own, right = normal(hosts[rank]), normal(hosts[(rank + 1) % len(hosts)])
    try:
        entries = sorted(fd_dir.iterdir(), key=lambda p: p.name)
    except OSError:
        return []  # no /proc (macOS): mlx's own wait it is
    descriptors = []
    for entry in entries:
        try:
            target = os.readlink(entry)
        except OSError:
            continue
        if not (target.startswith("socket:[") and entry.name.isdigit()):
            continue
        ends = connections.get(int(target[len("socket:["):-1]))
        if ends is not None and (ends[0] == own or ends[1] == right) and ends[1][1] != 0:
            descriptors.append(int(entry.name))
    return descriptors


@dataclass
class PeerWait:
    """poll(2) over duplicates of the ring's descriptors (a duplicate shares the socket;
    mlx's own descriptors and their flags are left alone)."""

    descriptors: list[int]

    def __post_init__(self) -> None:
        self._poll = select.poll()
        for descriptor in self.descriptors:
            self._poll.register(descriptor, select.POLLIN)

    @classmethod
    def find(cls, rank: int, hosts: Sequence[str]) -> "PeerWait | None":
        found = ring_descriptors(rank, hosts, tcp_connections())
        return cls([os.dup(descriptor) for descriptor in found]) if found else None

    def wait(self, seconds: float) -> bool:
        """Block until a ring socket has data (or is closed), at most `seconds` and never
        more than `MAX_POLL_SECONDS`; whether one did. The cap bounds what a wrong guess
        costs (data that came on a socket not found here): mlx's own wait follows."""
        return bool(self._poll.poll(min(max(seconds, 0.0), MAX_POLL_SECONDS) * 1000))
