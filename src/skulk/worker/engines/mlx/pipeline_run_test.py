"""Overlapped pipeline runs over 3 ranks in threads of one process, joined by queues: a
middle rank that neither embeds nor samples learns the tokens from the headers, three
micro-batches go round, a cancel asked on the middle rank alone drains a run; rank 0's
tokens are one engine's, and so are the log probabilities the last rank carries back to it
(score_carrier.py), and every rank ends with the same prefix-cache keys.
(tests/test_mlx_families_ring.py runs the same over the real ring with 2 ranks.)"""

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from skulk.shared.types.chunks import TokenChunk, TokenLogprob
from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.testing.queue_group import QueueGroup, run_rank_threads, shared_state
from skulk.testing.tiny_model import write_tiny_model
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.engine import MlxEngine
from skulk.worker.engines.mlx.generation_loop import GenerationLoop, LoopSettings
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import Request, build_request
from skulk.worker.engines.mlx.shard_loader import load_shard
from skulk.worker.engines.protocol import EngineConfig, EngineEvent, TaskDone, TaskOutput

RANKS = 3


def chat(text: str, max_tokens: int, logprobs: int | None = None) -> GenerationParams:
    return GenerationParams(model_id=ModelId("tiny"), max_tokens=max_tokens, temperature=0.0,
                            messages=[ChatMessage(role="user", content=text)],
                            logprobs=logprobs)


REQUESTS = {"a": chat("The quick brown fox", 12), "b": chat("Hello! How are you?", 9, 3),
            "c": chat("Numbers like 12345", 14), "d": chat("Skulk joins machines", 10, 0),
            "cancelled": chat("user assistant system", 300)}
ARRIVE = {"a": 0, "b": 0, "c": 0, "cancelled": 0, "d": 6}  # the step, on every rank
CANCEL_AT = 15  # the middle rank's step


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny3"), layers=3)


def run_rank(rank: int, model_dir: Path, shared: dict[str, Any],
             results: dict[int, list[EngineEvent]], loops: dict[int, GenerationLoop]) -> None:
    group = QueueGroup(rank, RANKS, shared)
    tokenizer = mlx_api.load_tokenizer(model_dir)
    shard = load_shard(model_dir, group, rank, rank + 1, "pipeline")

    def output(request: Request, reused: int) -> StreamedText:
        return StreamedText(detokenizer=tokenizer.detokenizer(), stops=[],
                            eos_token_ids=tokenizer.eos_token_ids,
                            max_tokens=request.max_tokens, prompt_tokens=len(request.prompt),
                            cached_tokens=reused)

    vocabulary = Vocabulary.of_tokenizer_json(
        model_dir / "tokenizer.json", mlx_api.read_model_shape(model_dir).vocab_size,
        tokenizer.eos_token_ids) if rank in (0, RANKS - 1) else None
    loop = GenerationLoop(shard, PrefixCache(8, 100_000), output,
                          LoopSettings(slots=6, micro_batches=RANKS), vocabulary=vocabulary)
    loops[rank] = loop
    events = results[rank]
    step = 0
    while len({e.task_id for e in events if isinstance(e, TaskDone)}) < len(REQUESTS):
        for task_id, at in ARRIVE.items():
            if at == step:
                loop.submit(build_request(TaskId(task_id), REQUESTS[task_id], tokenizer,
                                          512, 10**6))
        if rank == 1 and step == CANCEL_AT:
            loop.cancel(TaskId("cancelled"))
        events.extend(loop.step())
        step += 1
        assert step < 2000, "the ranks never finished"


def test_three_ranks_overlap_and_agree(model_dir: Path) -> None:
    shared = shared_state(RANKS)
    results: dict[int, list[EngineEvent]] = defaultdict(list)
    loops: dict[int, GenerationLoop] = {}
    run_rank_threads(RANKS, shared,
                     lambda rank: run_rank(rank, model_dir, shared, results, loops))
    ended = [{e.task_id: e.status for e in results[r] if isinstance(e, TaskDone)}
             for r in range(RANKS)]
    want_status = {**{t: "complete" for t in REQUESTS}, "cancelled": "cancelled"}
    assert ended == [want_status] * RANKS
    got: dict[str, list[int]] = defaultdict(list)
    scored: dict[str, list[TokenLogprob]] = defaultdict(list)
    for event in results[0]:
        if isinstance(event, TaskOutput) and isinstance(event.chunk, TokenChunk):
            got[event.task_id].extend(event.chunk.token_ids)
            scored[event.task_id].extend(event.chunk.logprobs)
    alone = MlxEngine(EngineConfig(model_path=str(model_dir), context_token_limit=512,
                                   options=MlxOptions.parse({"speculation": "false",
                                                              "prefix_cache_mb": "0"})))
    alone.load()
    for task_id, params in REQUESTS.items():
        chunks = list(alone.generate(params))
        want = [t for c in chunks for t in c.token_ids]
        if params.logprobs is not None:
            _same_scores(scored[task_id], [e for c in chunks for e in c.logprobs],
                         params.logprobs)
        else:
            assert not scored[task_id], task_id
        if task_id == "cancelled":
            assert 0 < len(got[task_id]) < len(want) and got[task_id] == want[: len(got[task_id])]
        else:
            assert got[task_id] == want, task_id
    # The middle rank's rows held the same tokens as the others': same prefix-cache keys.
    keys = [list(loops[r].prefix_cache._entries) for r in range(RANKS)]
    assert keys[0] and keys[0] == keys[1] == keys[2]
    assert loops[0].overlapped_runs >= 2
    assert loops[0].overlapped_steps == loops[1].overlapped_steps == loops[2].overlapped_steps
    assert loops[0].overlapped_steps >= 20


def _same_scores(got: list[TokenLogprob], want: list[TokenLogprob], top: int) -> None:
    """The split's log probabilities are the whole model's (its last rank computes the
    same logits, up to float rounding), with the same alternatives."""
    assert got and len(got) == len(want)
    for mine, theirs in zip(got, want, strict=True):
        assert (mine.token, mine.bytes) == (theirs.token, theirs.bytes)
        assert abs(mine.logprob - theirs.logprob) < 1e-3
        assert len(mine.top) == len(theirs.top) == top
        assert [t.token for t in mine.top] == [t.token for t in theirs.top]
        assert all(abs(a.logprob - b.logprob) < 1e-3
                   for a, b in zip(mine.top, theirs.top, strict=True))
