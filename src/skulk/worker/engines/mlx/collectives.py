"""The collectives a model shard and the generation loop use, typed and under deadlines.

`Group` is all the engine sees of the ring: point-to-point send/recv for pipeline hops and
fixed-shape all_sum/all_gather for agreement and token broadcast. Every call is evaluated
at once on the CPU stream (a `send` that is never evaluated is never sent) and under the
group's collective deadline, so a wedged peer ends this process instead of hanging the
cluster (see ring.py). A send and a recv are never evaluated together: that deadlocks.
"""

from collections.abc import Sequence
from typing import Protocol

import mlx.core as mx

from skulk.worker.engines.mlx.hop_log import HopLog
from skulk.worker.engines.mlx.ring import (
    CollectiveTimeout,
    DeadlineWatchdog,
    GroupConnectTimeout,
    GroupError,
    init_ring,
)

__all__ = [
    "CollectiveTimeout", "Group", "GroupConnectTimeout", "GroupError", "RingGroup",
    "SoloGroup", "connect_ring", "DEFAULT_COLLECTIVE_DEADLINE_SECONDS",
]

# Generous: a recv also waits for the sending rank's compute of its layers for the
# whole (chunk of a) prompt, which on a slow CPU takes tens of seconds.
DEFAULT_COLLECTIVE_DEADLINE_SECONDS = 60.0


class Group(Protocol):
    """The ranks of one instance. Every rank calls the same collectives in the same order."""

    rank: int
    size: int

    def send(self, x: mx.array, dst: int) -> None:
        """Send `x` to rank `dst`; returns once it is handed to the transport."""
        ...

    def recv(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int) -> mx.array:
        """The array of this shape and dtype that rank `src` sends, evaluated."""
        ...

    def all_sum(self, x: mx.array) -> mx.array:
        """The element-wise sum of `x` over all ranks (same shape everywhere), evaluated."""
        ...

    def all_gather(self, x: mx.array) -> mx.array:
        """Every rank's `x` concatenated along axis 0 in rank order, evaluated."""
        ...

    def barrier(self) -> None:
        """Return once every rank has reached its barrier."""
        ...


class SoloGroup:
    """A group of one process: sums and gathers are the identity; it has no peer."""

    def __init__(self) -> None:
        self.rank = 0
        self.size = 1

    def send(self, x: mx.array, dst: int) -> None:
        raise GroupError(f"a group of one has no rank {dst} to send to")

    def recv(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int) -> mx.array:
        raise GroupError(f"a group of one has no rank {src} to receive from")

    def all_sum(self, x: mx.array) -> mx.array:
        mx.eval(x)
        return x

    def all_gather(self, x: mx.array) -> mx.array:
        mx.eval(x)
        return x

    def barrier(self) -> None:
        return None


class RingGroup:
    """The ranks of an mlx.distributed ring, every collective under one deadline."""

    def __init__(
        self,
        native: mx.distributed.Group,
        deadline_seconds: float = DEFAULT_COLLECTIVE_DEADLINE_SECONDS,
        watchdog: DeadlineWatchdog | None = None,
    ) -> None:
        self._native = native
        self.rank: int = int(native.rank())
        self.size: int = int(native.size())
        self.deadline_seconds = deadline_seconds
        self._watchdog = watchdog if watchdog is not None else DeadlineWatchdog()
        self.hops = HopLog()

    @property
    def native(self) -> mx.distributed.Group:
        """The mlx Group itself, for model code that shards over it (mlx-lm's `shard`)."""
        return self._native

    def evaluate(self, what: str, *arrays: mx.array) -> None:
        """Evaluate arrays whose graph holds collectives (a tensor-parallel forward)."""
        with self._watchdog.guard(self.deadline_seconds, f"rank {self.rank}: {what}"):
            try:
                mx.eval(*arrays)
            except RuntimeError as error:
                raise GroupError(f"rank {self.rank}: {what} failed: {error}") from error

    def send(self, x: mx.array, dst: int) -> None:
        self._check_peer(dst)
        started = self.hops.clock()
        sent = mx.distributed.send(x, dst, group=self._native, stream=mx.cpu)
        self.evaluate(f"send {tuple(x.shape)} to rank {dst}", sent)
        self.hops.note("pipeline.send", started)

    def recv(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int) -> mx.array:
        self._check_peer(src)
        started = self.hops.clock()
        received = mx.distributed.recv(shape, dtype, src, group=self._native, stream=mx.cpu)
        self.evaluate(f"recv {shape} from rank {src}", received)
        self.hops.note("pipeline.recv", started)
        return received

    def all_sum(self, x: mx.array) -> mx.array:
        total = mx.distributed.all_sum(x, group=self._native, stream=mx.cpu)
        self.evaluate(f"all_sum {tuple(x.shape)}", total)
        return total

    def all_gather(self, x: mx.array) -> mx.array:
        gathered = mx.distributed.all_gather(x, group=self._native, stream=mx.cpu)
        self.evaluate(f"all_gather {tuple(x.shape)}", gathered)
        return gathered

    def barrier(self) -> None:
        self.all_sum(mx.zeros((1,), dtype=mx.int32))

    def _check_peer(self, peer: int) -> None:
        if peer == self.rank or not 0 <= peer < self.size:
            raise GroupError(f"rank {self.rank} has no peer {peer} in a group of {self.size}")


def connect_ring(
    rank: int,
    hosts: Sequence[str],
    deadline_seconds: float,
    collective_deadline_seconds: float = DEFAULT_COLLECTIVE_DEADLINE_SECONDS,
) -> Group:
    """Join the ring over `hosts` (hosts[i] = "ip:port" of rank i) as `rank`.

    One host gives a SoloGroup without touching the network. A neighbour that never
    connects ends the process after `deadline_seconds` (see ring.py); a malformed host
    list or a failed init raises GroupError.
    """
    if len(hosts) == 1 and rank == 0:
        return SoloGroup()
    native = init_ring(rank, hosts, deadline_seconds)
    return RingGroup(native, deadline_seconds=collective_deadline_seconds)
