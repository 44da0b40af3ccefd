"""The NaN/Inf guard: a corrupt hop or logits fail the same step on every rank.

Two ranks run in threads of one process, joined by an in-process group (all_sum meets at
a barrier, send/recv through a queue); the generation loop test runs the real loop over
the tiny random-weight model with the deciding rank's logits turning NaN mid-answer.
"""

import queue
import threading
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.corruption_guard import (
    LOGITS_BIT,
    GuardedGroup,
    GuardedShard,
    describe,
    finite,
    unguarded,
)
from skulk.worker.engines.mlx.generation_loop import GenerationLoop, LoopSettings
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import Request, build_request
from skulk.worker.engines.mlx.shard import WholeModelShard
from skulk.worker.engines.protocol import EngineEvent, PipelineCorrupt, TaskOutput

WAIT_SECONDS = 20.0


class PairGroup:
    """Rank `rank` of two ranks in threads: all_sum at a barrier, send/recv by a queue."""

    def __init__(self, rank: int, shared: dict[str, Any]) -> None:
        self.rank, self.size, self._shared = rank, 2, shared

    def all_sum(self, x: mx.array) -> mx.array:
        self._shared["parts"][self.rank] = np.array(x)
        self._shared["barrier"].wait(WAIT_SECONDS)
        total = sum(self._shared["parts"])
        self._shared["barrier"].wait(WAIT_SECONDS)
        return mx.array(total)

    def all_gather(self, x: mx.array) -> mx.array:
        raise NotImplementedError

    def send(self, x: mx.array, dst: int) -> None:
        mx.eval(x)
        self._shared["wire"].put(x)

    def recv(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int) -> mx.array:
        received: mx.array = self._shared["wire"].get(timeout=WAIT_SECONDS)
        return received

    def barrier(self) -> None:
        self._shared["barrier"].wait(WAIT_SECONDS)


def _shared() -> dict[str, Any]:
    return {"barrier": threading.Barrier(2), "parts": [None, None], "wire": queue.Queue()}


def _on_both(work: Any, shared: dict[str, Any]) -> dict[int, Any]:
    """Run work(group) on ranks 0 and 1 at once; each rank's return value or exception."""
    results: dict[int, Any] = {}

    def run(rank: int) -> None:
        try:
            results[rank] = work(rank, PairGroup(rank, shared))
        except Exception as error:  # the test inspects it
            results[rank] = error

    threads = [threading.Thread(target=run, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS * 3)
    assert not any(thread.is_alive() for thread in threads)
    return results


def test_finite_and_describe() -> None:
    assert finite(mx.ones((2, 3)))
    assert not finite(mx.array([1.0, float("inf")]))
    assert not finite(mx.array([[float("nan")]], dtype=mx.bfloat16))
    text = describe((1 << 1) | LOGITS_BIT, 3)
    assert "rank 1's outgoing activations" in text and "deciding rank's logits" in text
    assert "rank 0" not in text


def test_a_corrupt_hop_fails_the_next_agreement_on_every_rank() -> None:
    def work(rank: int, group: PairGroup) -> list[int]:
        guarded = GuardedGroup(group)
        assert unguarded(guarded) is group
        if rank == 0:
            guarded.send(mx.ones((1, 1, 4)), 1)
        else:
            guarded.recv((1, 1, 4), mx.float32, 0)
        clean = guarded.all_sum(mx.array([rank, 1], dtype=mx.int32))
        if rank == 0:
            guarded.send(mx.array([[[1.0, float("nan"), 0.0, 0.0]]]), 1)
        else:
            guarded.recv((1, 1, 4), mx.float32, 0)
        guarded.all_sum(mx.array([0, 0], dtype=mx.int32))
        return [int(v) for v in np.array(clean)]

    results = _on_both(work, _shared())
    for rank in (0, 1):
        assert isinstance(results[rank], PipelineCorrupt), results[rank]
        assert "rank 0's outgoing activations" in str(results[rank])


def test_a_clean_agreement_returns_the_plain_sum() -> None:
    def work(rank: int, group: PairGroup) -> list[int]:
        summed = GuardedGroup(group).all_sum(mx.array([rank, 2, 3], dtype=mx.int32))
        return [int(v) for v in np.array(summed)]

    assert _on_both(work, _shared()) == {0: [1, 4, 6], 1: [1, 4, 6]}


def test_the_injection_file_corrupts_one_send_of_the_rank_it_names(tmp_path: Path) -> None:
    trigger = tmp_path / "inject"
    trigger.write_text("0\n")
    shared = _shared()
    other = GuardedGroup(PairGroup(1, shared), trigger)
    other.send(mx.ones((2,)), 0)  # rank 1 is not named: nothing injected, file kept
    assert trigger.exists() and other.found == 0
    named = GuardedGroup(PairGroup(0, shared), trigger)
    named.send(mx.ones((2,)), 1)
    assert not trigger.exists() and named.found == 1
    named.found = 0
    named.send(mx.ones((2,)), 1)  # once only
    assert named.found == 0


class PoisonedShard(WholeModelShard):
    """The whole model on both ranks; rank 1 decides, and its logits turn NaN from the
    `poison_at`-th single-token forward on."""

    def __init__(self, model: mlx_api.LanguageModel, group: PairGroup, poison_at: int) -> None:
        super().__init__(model, group)
        self.poison_at, self.decodes = poison_at, 0

    @property
    def decides(self) -> bool:
        return self.group.rank == 1

    def forward(self, tokens: mx.array, cache: list[Any]) -> mx.array | None:
        logits = super().forward(tokens, cache)
        if not self.decides:
            return None
        assert logits is not None
        if tokens.shape[1] == 1:
            self.decodes += 1
            if self.decodes >= self.poison_at:
                return logits * mx.array(float("nan"))
        return logits


def test_nan_logits_fail_the_loop_step_on_every_rank(tiny_model_dir: Path) -> None:
    tokenizer = mlx_api.load_tokenizer(tiny_model_dir)
    params = GenerationParams(model_id=ModelId("tiny"), max_tokens=40, temperature=0.0,
                              messages=[ChatMessage(role="user", content="Hello there")])

    def output(request: Request, reused: int) -> StreamedText:
        return StreamedText(detokenizer=tokenizer.detokenizer(), stops=[],
                            eos_token_ids=frozenset(), max_tokens=request.max_tokens,
                            prompt_tokens=len(request.prompt), cached_tokens=reused)

    def work(rank: int, group: PairGroup) -> tuple[list[EngineEvent], Exception | None]:
        inner = PoisonedShard(mlx_api.load_model(tiny_model_dir), group, poison_at=5)
        shard = GuardedShard(inner, GuardedGroup(group))
        loop = GenerationLoop(shard, PrefixCache(0, 0), output,
                              LoopSettings(slots=2, prefill_chunk=32))
        loop.submit(build_request(TaskId("t"), params, tokenizer, 512, 10**6))
        events: list[EngineEvent] = []
        for _ in range(50):
            try:
                events += loop.step()
            except PipelineCorrupt as error:
                return events, error
        return events, None

    results = _on_both(work, _shared())
    for rank in (0, 1):
        events, error = results[rank]
        assert isinstance(error, PipelineCorrupt), results[rank]
        assert "deciding rank's logits" in str(error)
    # Rank 0 streamed the tokens of the clean steps, and nothing after the corrupt one.
    streamed = [e for e in results[0][0] if isinstance(e, TaskOutput)]
    assert 1 <= len(streamed) <= 4


@pytest.mark.parametrize("positions, checked", [(1, True), (16, True), (17, False)])
def test_logits_are_checked_for_decodes_not_prefill_chunks(
        positions: int, checked: bool) -> None:
    class NanLogits:
        group: Any = None
        n_layers_here = 1
        decides = True

        def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
            return []

        def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array:
            return mx.full((1, tokens.shape[1], 8), float("nan"))

    guard = GuardedGroup(PairGroup(1, _shared()))
    shard = GuardedShard(NanLogits(), guard)
    shard.forward(mx.zeros((1, positions), dtype=mx.int32), [])
    assert bool(guard.found & LOGITS_BIT) is checked
