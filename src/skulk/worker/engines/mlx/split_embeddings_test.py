"""Embeddings of a model split by layers over 3 ranks in threads of one process, joined by
queues (the real pipeline shards): every rank takes the request at the same step beside a
generation, and rank 0's vectors are one whole engine's. (The cluster test runs the same
through /v1/embeddings on real processes, split by layers and by heads.)"""

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skulk.shared.types.chunks import ErrorChunk, TokenChunk
from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.testing.queue_group import QueueGroup, run_rank_threads, shared_state
from skulk.testing.tiny_model import write_tiny_model
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.engine import MlxEngine
from skulk.worker.engines.mlx.generation_loop import GenerationLoop, LoopSettings
from skulk.worker.engines.mlx.multi_rank_test import ReplicaShard
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import Request, build_request
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.mlx.shard_loader import load_shard
from skulk.worker.engines.protocol import EngineConfig, EngineEvent, TaskDone, TaskOutput

RANKS = 3
TEXTS = ["hello there", "the quick brown fox", "", "hello there"]
CONTEXT = 64
REQUESTS = {
    "embed": GenerationParams(model_id=ModelId("tiny"), messages=[], embed=TEXTS),
    "chat": GenerationParams(model_id=ModelId("tiny"), max_tokens=6, temperature=0.0,
                             messages=[ChatMessage(role="user", content="Hello!")]),
    "too long": GenerationParams(model_id=ModelId("tiny"), messages=[],
                                 embed=["fine", "word " * CONTEXT])}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny-embed"), layers=3)


def run_ranks(model_dir: Path, shard_of: Any,
              requests: dict[str, GenerationParams] = REQUESTS) -> dict[int, list[EngineEvent]]:
    """Every rank's events once each rank saw every request end."""
    shared = shared_state(RANKS)
    results: dict[int, list[EngineEvent]] = defaultdict(list)

    def run(rank: int) -> None:
        group = QueueGroup(rank, RANKS, shared)
        tokenizer = mlx_api.load_tokenizer(model_dir)
        shard: ModelShard = shard_of(group)

        def output(request: Request, reused: int) -> StreamedText:
            return StreamedText(detokenizer=tokenizer.detokenizer(), stops=[],
                                eos_token_ids=tokenizer.eos_token_ids,
                                max_tokens=request.max_tokens,
                                prompt_tokens=len(request.prompt), cached_tokens=reused)

        shape = mlx_api.read_model_shape(model_dir)
        vocabulary = Vocabulary.of_tokenizer_json(model_dir / "tokenizer.json",
                                                  shape.vocab_size, tokenizer.eos_token_ids)
        loop = GenerationLoop(shard, PrefixCache(8, 100_000), output, LoopSettings(slots=4),
                              vocabulary=vocabulary, hidden_size=shape.hidden_size)
        for task_id, params in requests.items():
            loop.submit(build_request(TaskId(task_id), params, tokenizer, CONTEXT, 10**6))
        events = results[rank]
        for _ in range(200):
            if len({e.task_id for e in events if isinstance(e, TaskDone)}) == len(requests):
                return
            events.extend(loop.step())
        raise AssertionError("the ranks never finished")

    run_rank_threads(RANKS, shared, run)
    return results


def outputs(events: list[EngineEvent], task_id: str) -> list[TokenChunk | ErrorChunk]:
    return [e.chunk for e in events if isinstance(e, TaskOutput) and e.task_id == task_id]


def ended(events: list[EngineEvent]) -> dict[str, str]:
    return {e.task_id: e.status for e in events if isinstance(e, TaskDone)}


def test_a_pipeline_embeds_as_the_whole_model_does(model_dir: Path) -> None:
    results = run_ranks(model_dir, lambda group: load_shard(
        model_dir, group, group.rank, group.rank + 1, "pipeline"))
    want_status = {"embed": "complete", "chat": "complete", "too long": "failed"}
    assert [ended(results[r]) for r in range(RANKS)] == [want_status] * RANKS
    assert not any(isinstance(e, TaskOutput) for r in (1, 2) for e in results[r])
    [chunk] = outputs(results[0], "embed")
    assert isinstance(chunk, TokenChunk) and chunk.embeddings is not None
    whole = MlxEngine(EngineConfig(model_path=str(model_dir), context_token_limit=CONTEXT,
                                   options=MlxOptions.parse({"speculation": "false"})))
    whole.load()
    want, tokens = whole.embed(TEXTS)
    assert chunk.usage is not None and chunk.usage.prompt_tokens == tokens
    assert np.allclose(np.array(chunk.embeddings), np.array(want), atol=1e-5)
    assert np.allclose(chunk.embeddings[0], chunk.embeddings[3])
    [refused] = outputs(results[0], "too long")
    assert isinstance(refused, ErrorChunk) and "input 1 is" in refused.message
    assert [t for c in outputs(results[0], "chat") if isinstance(c, TokenChunk)
            for t in c.token_ids]


def test_a_shard_without_hidden_states_fails_the_request_on_every_rank(
        model_dir: Path) -> None:
    results = run_ranks(model_dir, lambda group: ReplicaShard(
        mlx_api.load_model(model_dir), group))
    assert [ended(results[r])["embed"] for r in range(RANKS)] == ["failed"] * RANKS
    [failure] = outputs(results[0], "embed")
    assert isinstance(failure, ErrorChunk) and "no hidden states" in failure.message
