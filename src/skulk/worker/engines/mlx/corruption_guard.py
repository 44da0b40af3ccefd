"""NaN/Inf guard for split instances: every hop's outgoing activations and the deciding
rank's logits are checked (one reduction each), and a hit fails the step on every rank.

The ranks must fail together, or rank 0 would wait in a collective for a rank that gave
up. So a rank only notes what it found (a bit per rank) and the next agreement all_sum the
loop makes carries the bits as one extra element: every rank then sees the same sum and
raises `PipelineCorrupt` at the same point. The runner turns that into a
`pipeline_corrupt` error for every request in the batch and exits (the batch's caches
hold the corrupt KV), and the API fails the requests over.

Prefill's logits are never computed (the loop only fills the cache), so they are not
checked: corrupt KV shows in the next decode's logits, one step later.

`SKULK_TEST_INJECT_NAN` (tests only) names a file; when it exists and holds this rank's
number, the rank's next outgoing activations become NaN and the file is removed, so the
fault happens once whichever process sees it.
"""

import os
from collections.abc import Callable
from pathlib import Path

import mlx.core as mx
import numpy as np

from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import Group, await_peer, receive_and_run
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.protocol import PipelineCorrupt

INJECT_NAN_VARIABLE = "SKULK_TEST_INJECT_NAN"
# Logits of at most this many positions are checked: a decode step (1) or a speculative
# verification (1 + drafts); a longer forward is a prefill chunk, whose logits nobody reads.
MOST_CHECKED_POSITIONS = 16
# Bit 30 stands for "the deciding rank's logits"; bits 0..29 for each rank's activations.
LOGITS_BIT = 1 << 30


def finite(x: mx.array) -> bool:
    """True when no element of `x` is NaN or ±Inf (one reduction)."""
    return bool(mx.all(mx.isfinite(x)).item())


def describe(bits: int, size: int) -> str:
    """What the summed guard bits say, for the error a client may read."""
    found = [f"rank {rank}'s outgoing activations" for rank in range(size)
             if bits & (1 << rank)]
    if bits & LOGITS_BIT:
        found.append("the deciding rank's logits")
    return ("NaN/Inf in " + " and ".join(found) +
            "; the instance's output cannot be trusted (a faulty machine or link?)")


class GuardedGroup:
    """A `Group` whose sends are checked and whose int32 vector all_sums carry the bits."""

    def __init__(self, inner: Group, inject_file: Path | None = None) -> None:
        self.inner = inner
        self.rank = inner.rank
        self.size = inner.size
        self.found = 0  # this rank's bits since the last agreement
        self._inject_file = inject_file

    def note(self, bit: int) -> None:
        self.found |= bit

    def send(self, x: mx.array, dst: int) -> None:
        if self._inject_now():
            x = x + mx.array(float("nan"), dtype=x.dtype)
        self.inner.send(x, dst)  # evaluates x: the check below only reduces it
        if not finite(x):
            self.note(1 << self.rank)

    def recv(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int) -> mx.array:
        return self.inner.recv(shape, dtype, src)

    def receive_and_run(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int,
                        run: Callable[[mx.array], mx.array]) -> mx.array:
        return receive_and_run(self.inner, shape, dtype, src, run)

    def await_peer(self) -> None:
        await_peer(self.inner)

    def all_sum(self, x: mx.array) -> mx.array:
        if x.ndim != 1 or x.dtype != mx.int32:
            return self.inner.all_sum(x)
        found, self.found = self.found, 0
        summed = np.array(self.inner.all_sum(
            mx.concatenate([x, mx.array([found], dtype=mx.int32)])), dtype=np.int32)
        # Bits are distinct per rank, except the logits bit only the deciding rank sets.
        bits = int(summed[-1])
        if bits:
            raise PipelineCorrupt(describe(bits, self.size))
        return mx.array(summed[:-1])

    def all_gather(self, x: mx.array) -> mx.array:
        return self.inner.all_gather(x)

    def barrier(self) -> None:
        self.inner.barrier()

    def _inject_now(self) -> bool:
        if self._inject_file is None:
            return False
        try:
            wanted = self._inject_file.read_text().strip()
        except OSError:
            return False
        if wanted != str(self.rank):
            return False
        try:
            self._inject_file.unlink()  # whoever unlinks it injects: once in all
        except OSError:
            return False
        return True


class GuardedShard:
    """A `ModelShard` whose hops and logits go through a `GuardedGroup`."""

    def __init__(self, inner: ModelShard, group: GuardedGroup) -> None:
        self.inner = inner
        self.group: Group = group
        self._guard = group
        self.n_layers_here = inner.n_layers_here
        inner.group = group  # the shard's own sends (pipeline hops) are checked too

    @property
    def decides(self) -> bool:
        return self.inner.decides

    def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
        return self.inner.make_cache(batch_left_padding)

    def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array | None:
        logits = self.inner.forward(tokens, cache)
        if logits is not None and tokens.shape[1] <= MOST_CHECKED_POSITIONS and not finite(
                logits):
            self._guard.note(LOGITS_BIT)
        return logits


def guard_shard(shard: ModelShard) -> GuardedShard:
    """Guard a split instance's shard (a group of one has no hop to guard)."""
    inject = os.environ.get(INJECT_NAN_VARIABLE)
    return GuardedShard(shard, GuardedGroup(shard.group, Path(inject) if inject else None))


def unguarded(group: Group) -> Group:
    """The group under a guard, for what needs the ring itself (its hop log)."""
    return group.inner if isinstance(group, GuardedGroup) else group
