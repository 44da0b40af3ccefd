"""The ranks of one instance as threads of one process: a `Group` whose links are queues
and whose all_sum meets at a barrier, for tests of the generation loop across ranks
without processes or a ring."""

import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import mlx.core as mx
import numpy as np

WAIT_SECONDS = 30.0


def run_rank_threads(size: int, shared: dict[str, Any], run: Callable[[int], None],
                     timeout: float = 120.0,
                     meanwhile: Callable[[], None] | None = None) -> None:
    """`run(rank)` for each of `size` ranks on a thread of its own; a rank that fails aborts
    the shared barrier (so the others stop waiting on it) and the failures are raised.
    `meanwhile` runs on the calling thread while the ranks do (a test that tells them when
    to stop); if it fails, the barrier is aborted too. The ranks get `timeout` seconds in
    all; any still running then are released from the barrier and the test fails."""
    failures: list[BaseException] = []

    def target(rank: int) -> None:
        try:
            run(rank)
        except BaseException as error:
            failures.append(error)
            shared["barrier"].abort()

    threads = [threading.Thread(target=target, args=(r,)) for r in range(size)]
    for thread in threads:
        thread.start()
    try:
        if meanwhile is not None:
            meanwhile()
    except BaseException:
        shared["barrier"].abort()
        raise
    finally:
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [rank for rank, thread in enumerate(threads) if thread.is_alive()]
        if stuck:
            shared["barrier"].abort()
    assert not stuck, f"ranks {stuck} did not finish in {timeout} s"
    assert not failures, failures


def shared_state(size: int) -> dict[str, Any]:
    """What the `size` ranks of one test share: the barrier, the summands, the links."""
    return {"barrier": threading.Barrier(size), "parts": [None] * size,
            "links": defaultdict(queue.Queue)}


class QueueGroup:
    """Rank `rank` of `size` threads: point-to-point queues, all_sum at a barrier."""

    def __init__(self, rank: int, size: int, shared: dict[str, Any]) -> None:
        self.rank, self.size, self._shared = rank, size, shared

    def send(self, x: mx.array, dst: int) -> None:
        self._shared["links"][(self.rank, dst)].put(np.array(x))

    def recv(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int) -> mx.array:
        value = self._shared["links"][(src, self.rank)].get(timeout=WAIT_SECONDS)
        if value.shape != shape:
            raise AssertionError(f"rank {self.rank} expected {shape} from {src}, "
                                 f"got {value.shape}")
        return mx.array(value).astype(dtype)

    def all_sum(self, x: mx.array) -> mx.array:
        barrier: threading.Barrier = self._shared["barrier"]
        self._shared["parts"][self.rank] = np.array(x)
        barrier.wait(WAIT_SECONDS)
        total = sum(self._shared["parts"])
        barrier.wait(WAIT_SECONDS)  # nobody overwrites a part before all have summed
        return mx.array(total)

    def all_gather(self, x: mx.array) -> mx.array:
        raise NotImplementedError

    def barrier(self) -> None:
        self._shared["barrier"].wait(WAIT_SECONDS)
