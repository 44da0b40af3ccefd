"""Drafting rounds across ranks: 3 "ranks" in threads over an in-process group, each a
replica of the tiny model; only the last rank drafts and judges, every rank applies the
broadcast drafts and verdicts to its own cache. Rank 0's text must equal one process's
plain greedy text, and every rank must end with the same KV for each finished request."""

import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import mlx.core as mx
import pytest

from skulk.shared.types.ids import TaskId
from skulk.testing.queue_group import QueueGroup, run_rank_threads, shared_state
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.conftest import EngineFactory
from skulk.worker.engines.mlx.drafters.draft_model import DraftModelDrafter
from skulk.worker.engines.mlx.drafters.ngram import NGramDrafter
from skulk.worker.engines.mlx.drafters.protocol import Drafter
from skulk.worker.engines.mlx.generation_loop import GenerationLoop, LoopSettings
from skulk.worker.engines.mlx.multi_rank_test import ReplicaShard, params
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import Request, SpeculationChoice, build_request
from skulk.worker.engines.mlx.speculation.speculator import Speculator
from skulk.worker.engines.protocol import EngineEvent, TaskDone, TaskOutput

RANKS = 3
PROMPTS = {"a": "The quick brown fox", "b": "Skulk joins machines into one cluster"}


def run_rank(rank: int, model_dir: Path, drafter: str, shared: dict[str, Any],
             results: dict[int, list[EngineEvent]], caches: dict[int, PrefixCache]) -> None:
    group = QueueGroup(rank, RANKS, shared)  # one request at a time: drafting rounds
    tokenizer = mlx_api.load_tokenizer(model_dir)
    model = mlx_api.load_model(model_dir)
    shard = ReplicaShard(model, group)

    def output(request: Request, reused: int) -> StreamedText:
        return StreamedText(detokenizer=tokenizer.detokenizer(), stops=[],
                            eos_token_ids=tokenizer.eos_token_ids,
                            max_tokens=request.max_tokens, prompt_tokens=len(request.prompt),
                            cached_tokens=reused)

    speculator = None
    if shard.decides:
        drafters: dict[str, Drafter] = {"ngram": NGramDrafter(min_ngram=1),
                                        "draft_model": DraftModelDrafter(model)}
        # Fixed-length drafts: the target drafting for itself costs as much as it saves,
        # and the adaptive policy would stop asking it between the two requests.
        speculator = Speculator(drafters, vocab_size=10**6, adaptive=False)
    caches[rank] = PrefixCache(8, 4096)
    loop = GenerationLoop(shard, caches[rank], output,
                          LoopSettings(slots=1, prefill_chunk=32, speculation=True),
                          speculator)
    for task_id, text in PROMPTS.items():
        loop.submit(build_request(TaskId(task_id), params(text, 24), tokenizer, 400, 10**6,
                                  SpeculationChoice(drafter, 6)))
    try:
        while loop.has_work:
            results[rank].extend(loop.step())
    except threading.BrokenBarrierError:
        return


@pytest.mark.parametrize("drafter", ["draft_model", "ngram"])
def test_the_deciding_rank_drafts_and_every_rank_follows(
        tiny_model_dir: Path, make_engine: EngineFactory, drafter: str) -> None:
    shared = shared_state(RANKS)
    results: dict[int, list[EngineEvent]] = defaultdict(list)
    caches: dict[int, PrefixCache] = {}
    run_rank_threads(RANKS, shared,
                     lambda r: run_rank(r, tiny_model_dir, drafter, shared, results, caches),
                     timeout=60.0)
    for rank in range(RANKS):
        done = {e.task_id: e.status for e in results[rank] if isinstance(e, TaskDone)}
        assert done == {"a": "complete", "b": "complete"}, rank
    plain = make_engine(speculation="off", prefix_cache_mb="0")
    drafted = 0
    for task_id, text in PROMPTS.items():
        chunks = [e.chunk for e in results[0] if isinstance(e, TaskOutput)
                  and e.task_id == task_id]
        got = [t for c in chunks for t in getattr(c, "token_ids", [])]
        alone = [t for c in plain.generate(params(text, 24)) for t in c.token_ids]
        assert got == alone, task_id
        usage = getattr(chunks[-1], "usage", None)
        assert usage is not None
        drafted += usage.drafted_tokens
        if drafter == "draft_model":  # the target drafting for itself: all kept
            assert usage.accepted_tokens == usage.drafted_tokens > 0
    assert drafted > 0
    # Every rank trimmed the same tails: their finished requests' KV are the same.
    stored = [dict(caches[rank]._entries) for rank in range(RANKS)]
    assert stored[0].keys() == stored[1].keys() == stored[2].keys() and len(stored[0]) == 2
    for key in stored[0]:
        for rank in (1, 2):
            for (k0, v0), (k1, v1) in zip(stored[0][key].layers, stored[rank][key].layers,
                                          strict=True):
                assert mx.array_equal(k0, k1) and mx.array_equal(v0, v1)
