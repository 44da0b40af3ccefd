"""A Llama split into pipeline stages, run rank after rank in one process, equals the whole."""

from collections import deque
from pathlib import Path
from typing import Any

import mlx.core as mx
import pytest

from skulk.testing.random_llama import (
    tiny_llama_config,
    write_random_llama,
)
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import GroupError
from skulk.worker.engines.mlx.families.llama.pipeline import (
    LlamaPipelineShard,
    load_llama_pipeline,
)
from skulk.worker.engines.mlx.shard_loader import read_config

PROMPT = [[5, 17, 99, 3, 42, 7, 250, 11], [0, 0, 0, 8, 9, 10, 200, 13]]
PADDING = [0, 3]


class LoopbackGroup:
    """One rank of a pipeline whose ranks run one after another in this process."""

    def __init__(self, rank: int, size: int, mailbox: dict[tuple[int, int], deque[mx.array]]):
        self.rank = rank
        self.size = size
        self.mailbox = mailbox

    def send(self, x: mx.array, dst: int) -> None:
        mx.eval(x)
        self.mailbox.setdefault((self.rank, dst), deque()).append(x)

    def recv(self, shape: tuple[int, ...], dtype: mx.Dtype, src: int) -> mx.array:
        queue = self.mailbox.get((src, self.rank))
        if not queue:
            raise GroupError(f"rank {self.rank}: nothing was sent from rank {src}")
        x = queue.popleft()
        assert tuple(x.shape) == shape and x.dtype == dtype
        return x

    def all_sum(self, x: mx.array) -> mx.array:
        raise NotImplementedError("ranks run one after another: no collective can meet")

    def all_gather(self, x: mx.array) -> mx.array:
        raise NotImplementedError("ranks run one after another: no collective can meet")

    def barrier(self) -> None:
        raise NotImplementedError("ranks run one after another: no collective can meet")


def load_stages(model_dir: Path, bounds: list[int]) -> list[LlamaPipelineShard]:
    mailbox: dict[tuple[int, int], deque[mx.array]] = {}
    size = len(bounds) - 1
    config = read_config(model_dir)
    return [load_llama_pipeline(model_dir, config, LoopbackGroup(rank, size, mailbox),
                                bounds[rank], bounds[rank + 1]) for rank in range(size)]


def pipeline_forward(stages: list[LlamaPipelineShard], tokens: mx.array,
                     caches: list[list[Any]]) -> mx.array:
    outputs = [stage.forward(tokens, cache) for stage, cache in zip(stages, caches, strict=True)]
    assert all(out is None for out in outputs[:-1])
    logits = outputs[-1]
    assert logits is not None
    return logits


def whole_forward(model: mlx_api.LanguageModel, tokens: mx.array, cache: list[Any]) -> mx.array:
    return model(tokens, cache).astype(mx.float32)


@pytest.mark.parametrize(("tied", "quantize_bits"), [(True, None), (False, None), (True, 4)])
def test_stages_in_sequence_equal_the_whole_model(
    tmp_path: Path, tied: bool, quantize_bits: int | None
) -> None:
    model_dir = write_random_llama(tmp_path / "tiny", tiny_llama_config(tied=tied),
                                   seed=3, quantize_bits=quantize_bits)
    whole = mlx_api.load_model(model_dir)
    stages = load_stages(model_dir, [0, 2, 3, 6])
    assert [stage.n_layers_here for stage in stages] == [2, 1, 3]
    assert [stage.decides for stage in stages] == [False, False, True]

    whole_cache = mlx_api.make_batch_cache(6, PADDING)
    stage_caches = [stage.make_cache(PADDING) for stage in stages]
    assert [len(cache) for cache in stage_caches] == [2, 1, 3]
    prompt = mx.array(PROMPT, dtype=mx.int32)
    expected = whole_forward(whole, prompt, whole_cache)
    got = pipeline_forward(stages, prompt, stage_caches)
    assert got.shape == (2, 8, 256) and got.dtype == mx.float32
    # Same kernels on the same shapes in the same order: bit-identical, not just close.
    assert mx.array_equal(got, expected).item()

    # Decode steps reuse each stage's own cache, still matching the whole model.
    for _ in range(4):
        step = mx.argmax(expected[:, -1, :], axis=-1).astype(mx.int32)[:, None]
        expected = whole_forward(whole, step, whole_cache)
        got = pipeline_forward(stages, step, stage_caches)
        assert mx.array_equal(got, expected).item()


def test_each_stage_holds_only_its_own_weights(tmp_path: Path) -> None:
    model_dir = write_random_llama(tmp_path / "tiny", tiny_llama_config(tied=True), seed=1)
    first, middle, last = load_stages(model_dir, [0, 2, 3, 6])
    names = [set(stage.stage.module.parameters().keys()) for stage in (first, middle, last)]
    assert names[0] == {"layers", "embed_tokens"}
    assert names[1] == {"layers"}
    # Tied embeddings: the last stage needs the embedding matrix as its head.
    assert names[2] == {"layers", "embed_tokens", "norm"}
