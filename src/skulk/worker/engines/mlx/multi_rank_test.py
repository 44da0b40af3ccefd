"""The generation loop on 3 "ranks" in threads, joined by an in-process group.

Every rank holds the whole tiny model (a replica shard), but only the last rank's logits
choose tokens and only rank 0 emits chunks, as in a pipeline. Tasks reach the ranks at
different times and one rank alone is asked to cancel; every rank must reach the same
decisions, and rank 0's text must equal a single process's.
"""

import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import mlx.core as mx

from skulk.shared.types.chunks import ErrorChunk, TokenChunk
from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.testing.queue_group import QueueGroup, run_rank_threads, shared_state
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.conftest import EngineFactory
from skulk.worker.engines.mlx.generation_loop import GenerationLoop, LoopSettings
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import Request, build_request
from skulk.worker.engines.mlx.shard import WholeModelShard
from skulk.worker.engines.protocol import EngineEvent, TaskDone, TaskOutput

IDLE_STEP_SECONDS = 0.05


class ReplicaShard(WholeModelShard):
    """The whole model on every rank; only the last rank's logits count."""

    @property
    def decides(self) -> bool:
        return self.group.rank == self.group.size - 1

    def forward(self, tokens: mx.array, cache: list[Any]) -> mx.array | None:
        logits = super().forward(tokens, cache)
        return logits if self.decides else None


def params(text: str, max_tokens: int) -> GenerationParams:
    return GenerationParams(model_id=ModelId("tiny"), max_tokens=max_tokens, temperature=0.0,
                            messages=[ChatMessage(role="user", content=text)])


REQUESTS = {"a": params("The quick brown fox", 12), "b": params("Hello! How are you?", 10),
            "long": params("Skulk joins machines " * 30, 4),
            "cancelled": params("Numbers like 12345", 400),
            "ghost": params("Only rank 1 ever gets this", 5)}
# When each task reaches each rank (seconds from the start); rank 2 alone cancels one, once
# rank 0 has streamed some of it (a time would race the tiny model, which can write its
# whole context in well under a second on a warm machine).
ARRIVALS = {0: {"a": 0.0, "b": 0.0, "long": 0.0, "cancelled": 0.0},
            1: {"a": 0.15, "b": 0.02, "long": 0.3, "cancelled": 0.05, "ghost": 0.1},
            2: {"a": 0.05, "b": 0.25, "long": 0.1, "cancelled": 0.0}}
CANCELS = {2: "cancelled"}


def run_rank(rank: int, model_dir: Path, shared: dict[str, Any],
             results: dict[int, list[EngineEvent]]) -> None:
    """Step while there is work and tick when idle (as the runner does for a split model),
    until the test says stop; the test then breaks the barrier a peer may wait at."""
    group = QueueGroup(rank, 3, shared)
    tokenizer = mlx_api.load_tokenizer(model_dir)
    shard = ReplicaShard(mlx_api.load_model(model_dir), group)

    def output(request: Request, reused: int) -> StreamedText:
        return StreamedText(detokenizer=tokenizer.detokenizer(), stops=[],
                            eos_token_ids=tokenizer.eos_token_ids,
                            max_tokens=request.max_tokens, prompt_tokens=len(request.prompt),
                            cached_tokens=reused)

    loop = GenerationLoop(shard, PrefixCache(8, 4096), output,
                          LoopSettings(slots=4, prefill_chunk=32, join_wait_seconds=1.0))
    arrivals = dict(ARRIVALS[rank])
    cancels = {CANCELS[rank]} if rank in CANCELS else set()
    started, events, last_step = time.monotonic(), results[rank], 0.0
    while not shared["stop"].is_set():
        now = time.monotonic() - started
        for task_id, at in list(arrivals.items()):
            if now >= at:
                loop.submit(build_request(TaskId(task_id), REQUESTS[task_id], tokenizer,
                                          200, 10**6))
                del arrivals[task_id]
        for task_id in list(cancels):
            if any(isinstance(e, TaskOutput) and e.task_id == task_id for e in results[0]):
                loop.cancel(TaskId(task_id))
                cancels.discard(task_id)
        shared["idle"][rank] = not (arrivals or loop.has_work)
        if loop.has_work or now - last_step > IDLE_STEP_SECONDS:
            last_step = now
            try:
                events.extend(loop.step())
            except threading.BrokenBarrierError:
                return
        else:
            time.sleep(0.005)


def test_ranks_agree_on_joins_cancels_and_refusals(
        tiny_model_dir: Path, make_engine: EngineFactory) -> None:
    shared: dict[str, Any] = {**shared_state(3), "stop": threading.Event(),
                              "idle": [False] * 3}
    results: dict[int, list[EngineEvent]] = defaultdict(list)
    started = time.monotonic()

    def until_idle() -> None:
        try:
            # Idle everywhere, and late enough for the ghost request to have timed out on
            # rank 1.
            while not (all(shared["idle"]) and time.monotonic() - started > 1.5):
                assert time.monotonic() - started < 30, "the ranks never went idle"
                time.sleep(0.02)
        finally:
            shared["stop"].set()
            shared["barrier"].abort()

    run_rank_threads(3, shared, lambda r: run_rank(r, tiny_model_dir, shared, results),
                     timeout=10.0, meanwhile=until_idle)
    ended = {rank: {e.task_id: e.status for e in events if isinstance(e, TaskDone)}
             for rank, events in results.items()}
    agreed = {"a": "complete", "b": "complete", "long": "failed", "cancelled": "cancelled"}
    assert ended[0] == ended[2] == agreed
    # The request only rank 1 got never joins; it times out there alone.
    assert ended[1] == {**agreed, "ghost": "failed"}
    assert not any(isinstance(e, TaskOutput) for rank in (1, 2) for e in results[rank])
    chunks: dict[str, list[TokenChunk | ErrorChunk]] = defaultdict(list)
    for event in results[0]:
        if isinstance(event, TaskOutput):
            chunks[event.task_id].append(event.chunk)
    [refusal] = chunks["long"]
    assert isinstance(refusal, ErrorChunk) and refusal.error_kind == "context_length_exceeded"
    engine = make_engine(limit=200, prefix_cache_mb="0")
    for task_id in ("a", "b"):
        alone = [t for c in engine.generate(REQUESTS[task_id]) for t in c.token_ids]
        got = [t for c in chunks[task_id] if isinstance(c, TokenChunk) for t in c.token_ids]
        assert got == alone, task_id
    cancelled = [c for c in chunks["cancelled"] if isinstance(c, TokenChunk)]
    assert cancelled and all(c.finish_reason is None for c in cancelled)
