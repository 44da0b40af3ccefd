"""The full pipeline keeps both ranks busy: with a stage whose layers take a fixed time per
row (a sleep, which the machine's load cannot stretch much, added to a tiny real model),
8 requests over 2 ranks decode in overlapped runs in about half the plain split's time,
with the same tokens. A plain step costs rank 0's whole batch then rank 1's; a run keeps
each rank on its own half of the batch."""

import time
from pathlib import Path

import mlx.core as mx
import pytest

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.testing.queue_group import QueueGroup, run_rank_threads, shared_state
from skulk.testing.tiny_model import write_tiny_model
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import Group
from skulk.worker.engines.mlx.generation_loop import GenerationLoop, LoopSettings
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import Request, build_request
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.mlx.shard_loader import load_shard
from skulk.worker.engines.protocol import TaskDone, TaskOutput

SECONDS_PER_ROW = 0.004  # of one rank's layers, per decoded row
STREAMS = 8
TOKENS = 16


class RowPacedShard:
    """A real stage whose decode also takes SECONDS_PER_ROW per row, as a compute-bound
    stage would (prefill is not slowed: both runs pay it alike)."""

    def __init__(self, inner: ModelShard) -> None:
        self.inner = inner
        self.group: Group = inner.group
        self.n_layers_here = inner.n_layers_here

    @property
    def decides(self) -> bool:
        return self.inner.decides

    def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
        return self.inner.make_cache(batch_left_padding)

    def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array | None:
        """Rank 0 takes its time before sending its hidden states on, the last rank after
        receiving them (a middle rank would need both: this shard is for 2 ranks)."""
        pace = SECONDS_PER_ROW * tokens.shape[0] if tokens.shape[1] == 1 else 0.0
        if not self.decides:
            time.sleep(pace)
        logits = self.inner.forward(tokens, cache)
        if self.decides:
            time.sleep(pace)
        return logits


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny2"))


def decode(model_dir: Path, micro_batches: int) -> tuple[float, dict[str, list[int]]]:
    """Seconds from submitting 8 requests on both ranks to their end; rank 0's tokens."""
    shared = shared_state(2)
    tokens: dict[str, list[int]] = {f"s{i}": [] for i in range(STREAMS)}
    seconds: list[float] = []

    def rank(index: int) -> None:
        tokenizer = mlx_api.load_tokenizer(model_dir)
        shard = RowPacedShard(load_shard(model_dir, QueueGroup(index, 2, shared), index,
                                         index + 1, "pipeline"))

        def output(request: Request, reused: int) -> StreamedText:
            # No end of sequence: every request decodes its TOKENS.
            return StreamedText(detokenizer=tokenizer.detokenizer(), stops=[],
                                eos_token_ids=frozenset(), max_tokens=request.max_tokens,
                                prompt_tokens=len(request.prompt), cached_tokens=reused)

        loop = GenerationLoop(shard, PrefixCache(0, 0), output,
                              LoopSettings(slots=STREAMS, micro_batches=micro_batches))
        shard.group.barrier()
        started = time.perf_counter()
        for i in range(STREAMS):
            params = GenerationParams(
                model_id=ModelId("tiny"), max_tokens=TOKENS, temperature=0.0,
                messages=[ChatMessage(role="user", content=f"Request number {i} says")])
            loop.submit(build_request(TaskId(f"s{i}"), params, tokenizer, 512, 10**6))
        done = 0
        while done < STREAMS:
            for event in loop.step():
                done += isinstance(event, TaskDone)
                if isinstance(event, TaskOutput) and isinstance(event.chunk, TokenChunk):
                    tokens[event.task_id].extend(event.chunk.token_ids)
        if index == 0:
            seconds.append(time.perf_counter() - started)
            assert (loop.overlapped_runs > 0) == (micro_batches > 1)

    run_rank_threads(2, shared, rank)
    return seconds[0], tokens


def test_a_full_pipeline_decodes_in_about_half_the_plain_splits_time(model_dir: Path) -> None:
    plain, plain_tokens = decode(model_dir, micro_batches=1)
    full, full_tokens = decode(model_dir, micro_batches=2)
    assert full_tokens == plain_tokens
    assert all(len(answer) == TOKENS for answer in full_tokens.values())
    # Decode alone: plain 2 x 8 rows x 4 ms = 64 ms a step, overlapped ~32 ms; prefill and
    # the tiny model's own compute are the same in both. Generous for a loaded machine.
    assert full < 0.8 * plain, (full, plain)
