"""The collectives a model shard and the generation loop use, typed and under deadlines.

`Group` is all the engine sees of the ring: point-to-point send/recv for pipeline hops and
fixed-shape all_sum/all_gather for agreement and token broadcast. Every call is evaluated
at once on the CPU stream (a `send` that is never evaluated is never sent) and under the
group's collective deadline, so a wedged peer ends this process instead of hanging the
cluster (see ring.py). A send and a recv are never evaluated together: that deadlocks.
"""

from collections.abc import Callable, Sequence
from typing import Protocol

import mlx.core as mx

from skulk.worker.engines.mlx.hop_log import HopLog
from skulk.worker.engines.mlx.peer_wait import PeerWait
from skulk.worker.engines.mlx.ring import (
    CollectiveTimeout,
    DeadlineWatchdog,
    GroupConnectTimeout,
    GroupError,
    init_ring,
)
from skulk.worker.engines.mlx.ring_rendezvous import await_neighbours

__all__ = [
    "CollectiveTimeout", "Group", "GroupConnectTimeout", "GroupError", "RingGroup",
    "SoloGroup", "await_peer", "connect_ring", "receive_and_run",
    "DEFAULT_COLLECTIVE_DEADLINE_SECONDS",
]

# Generous: a recv also waits for the sending rank's compute of its layers for the
# whole (chunk of a) prompt, which on a slow CPU takes tens of seconds.
DEFAULT_COLLECTIVE_DEADLINE_SECONDS = 60.0

# mlx's init gets at least this long once the neighbours have met (they are up by then).
MIN_INIT_SECONDS = 10.0


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
        peer_wait: PeerWait | None = None,
    ) -> None:
        self._native = native
        self._peer_wait = peer_wait
        self.rank: int = int(native.rank())
        self.size: int = int(native.size())
        self.deadline_seconds = deadline_seconds
        self._watchdog = watchdog if watchdog is not None else DeadlineWatchdog()
        self.hops = HopLog()

    @property
    def native(self) -> mx.distributed.Group:
        """The mlx Group itself, for model code that shards over it (mlx-lm's `shard`)."""
        return self._native

    def evaluate(self, what: str, *arrays: mx.array, after_peer: bool = False) -> None:
        """Evaluate arrays whose graph holds collectives (a tensor-parallel forward);
        `after_peer`: first wait, without spinning, for a peer's data (peer_wait.py)."""
        with self._watchdog.guard(self.deadline_seconds, f"rank {self.rank}: {what}"):
            if after_peer and self._peer_wait is not None:
                self._peer_wait.wait(self.deadline_seconds)
            try:
                mx.eval(*arrays)
            except RuntimeError as error:
                raise GroupError(f"rank {self.rank}: {what} failed: {error}") from error

    def await_peer(self) -> None:
        """Block in poll(2) until a peer has sent this rank data (see `await_peer`)."""
        if self._peer_wait is not None:
            with self._watchdog.guard(self.deadline_seconds, f"rank {self.rank}: await"):
                self._peer_wait.wait(self.deadline_seconds)

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
        self.evaluate(f"recv {shape} from rank {src}", received, after_peer=True)
        self.hops.note("pipeline.recv", started)
        return received

    def receive_and_run(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int,
                        run: Callable[[mx.array], mx.array]) -> mx.array:
        """`run` of what rank `src` sends, evaluated with the receive under the deadline;
        the hop's span then covers the layers after it (as a send's covers those before)."""
        self._check_peer(src)
        started = self.hops.clock()
        received = mx.distributed.recv(shape, dtype, src, group=self._native, stream=mx.cpu)
        result = run(received)
        self.evaluate(f"recv {shape} from rank {src} and the work after it", result,
                      after_peer=True)
        self.hops.note("pipeline.recv", started)
        return result

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


def receive_and_run(group: Group, shape: tuple[int, ...], dtype: mx.Dtype, src: int,
                    run: Callable[[mx.array], mx.array]) -> mx.array:
    """`run(the array rank src sends)`, evaluated. A ring builds `run`'s graph before the
    data arrives, while the sending rank still computes, and evaluates the receive and
    the work together: building a stage's graph (milliseconds of Python per token) then
    overlaps the previous rank's compute instead of following it. Groups without the
    method (test groups) receive first, then run."""
    together = getattr(group, "receive_and_run", None)
    if together is not None:
        result: mx.array = together(shape, dtype, src, run)
        return result
    result = run(group.recv(shape, dtype, src))
    mx.eval(result)
    return result


def await_peer(group: Group) -> None:
    """Block, without spinning, until a peer has sent this rank data; a no-op off a ring.

    Only before an op whose data some peer sends without waiting for this rank (the
    deciding rank's all_sum, on the other ranks): before one that every rank enters
    waiting for the others, each would wait for a send that comes only after the wait."""
    wait = getattr(group, "await_peer", None)
    if wait is not None:
        wait()


def connect_ring(
    rank: int,
    hosts: Sequence[str],
    deadline_seconds: float,
    collective_deadline_seconds: float = DEFAULT_COLLECTIVE_DEADLINE_SECONDS,
) -> Group:
    """Join the ring over `hosts` (hosts[i] = "ip:port" of rank i) as `rank`.

    One host gives a SoloGroup without touching the network. The ranks first meet their
    neighbours (ring_rendezvous.py), then form mlx's ring; a neighbour that never comes
    raises GroupConnectTimeout, or ends the process once mlx's init passes the rest of
    `deadline_seconds` (ring.py); a malformed host list or a failed init raises GroupError.
    """
    if len(hosts) == 1 and rank == 0:
        return SoloGroup()
    waited = await_neighbours(rank, hosts, deadline_seconds)
    native = init_ring(rank, hosts, max(deadline_seconds - waited, MIN_INIT_SECONDS))
    return RingGroup(native, deadline_seconds=collective_deadline_seconds,
                     peer_wait=PeerWait.find(rank, hosts))
