"""Ring ports: where the ranks of a multi-node MLX instance listen for each other."""

import zlib
from collections.abc import Iterable

from skulk.shared.types.ids import InstanceId
from skulk.shared.types.instances import Instance

# Rank r of an instance listens on ring_port + r, so ranks sharing a host never collide.
# The range sits below every common ephemeral range (Linux 32768-60999, macOS and Windows
# 49152-65535): a port in it is never some outgoing connection's local port, which made a
# rank's bind fail now and then (EADDRINUSE) when the range was 53000-53999.
DEFAULT_RING_PORTS = range(31000, 32000)


def _taken(instances: Iterable[Instance]) -> set[int]:
    ports: set[int] = set()
    for instance in instances:
        if instance.ring_port is not None:
            ports.update(range(instance.ring_port, instance.ring_port + len(instance.shards)))
    return ports


def assign_ring_port(instance_id: InstanceId, world_size: int, instances: Iterable[Instance],
                     ports: range = DEFAULT_RING_PORTS) -> int | None:
    """The first free block of `world_size` ports, scanning from a start fixed by the id.

    The start comes from a stable hash of the instance id, so the same inputs give the same
    port on any master, and a re-placement (a new id) usually moves off the old instance's
    ports, whose sockets may linger. None when no block is free.
    """
    taken = _taken(instances)
    slots = len(ports) - world_size + 1
    if slots <= 0:
        return None
    first = zlib.crc32(instance_id.encode()) % slots
    for step in range(slots):
        port = ports.start + (first + step) % slots
        if taken.isdisjoint(range(port, port + world_size)):
            return port
    return None
