"""Every family split into pipeline stages, run rank after rank in one process, equals
mlx-lm's whole model bit for bit (the ring test does the same over real processes)."""

from collections import deque
from pathlib import Path

import mlx.core as mx
import pytest
from mlx.utils import tree_flatten

from skulk.testing.random_family import FAMILIES, tiny_config, write_random_model
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import GroupError, SoloGroup
from skulk.worker.engines.mlx.families.pipeline import PipelineShard, hop_bytes_per_token
from skulk.worker.engines.mlx.families.registry import family_for_config
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.mlx.shard_loader import load_shard, read_config

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


def load_stages(model_dir: Path, bounds: list[int]) -> list[PipelineShard]:
    mailbox: dict[tuple[int, int], deque[mx.array]] = {}
    size = len(bounds) - 1
    config = read_config(model_dir)
    family = family_for_config(config)
    shards = [family.load_pipeline(model_dir, config, LoopbackGroup(rank, size, mailbox),
                                   bounds[rank], bounds[rank + 1]) for rank in range(size)]
    assert all(isinstance(shard, PipelineShard) for shard in shards)
    return shards  # type: ignore[return-value]


def pipeline_forward(stages: list[PipelineShard], tokens: mx.array,
                     caches: list[list[mlx_api.LayerCache]]) -> mx.array:
    outputs = [stage.forward(tokens, cache) for stage, cache in zip(stages, caches, strict=True)]
    assert all(out is None for out in outputs[:-1])
    logits = outputs[-1]
    assert logits is not None
    return logits


def one_node(model_dir: Path) -> ModelShard:
    """What one node runs: mlx-lm's whole model (or the family's own, for Gemma 2)."""
    n_layers = int(read_config(model_dir)["num_hidden_layers"])
    return load_shard(model_dir, SoloGroup(), 0, n_layers, "pipeline")


def whole_forward(whole: ModelShard, tokens: mx.array,
                  cache: list[mlx_api.LayerCache]) -> mx.array:
    logits = whole.forward(tokens, cache)
    assert logits is not None
    return logits


def assert_stages_equal_whole(model_dir: Path, bounds: list[int], steps: int = 4) -> None:
    whole = one_node(model_dir)
    stages = load_stages(model_dir, bounds)
    whole_cache = whole.make_cache(PADDING)
    stage_caches = [stage.make_cache(PADDING) for stage in stages]
    prompt = mx.array(PROMPT, dtype=mx.int32)
    expected = whole_forward(whole, prompt, whole_cache)
    got = pipeline_forward(stages, prompt, stage_caches)
    # Same kernels on the same shapes in the same order: bit-identical, not just close.
    assert mx.array_equal(got, expected).item()
    # Decode steps reuse each stage's own cache, still matching the whole model (past
    # Gemma 3's sliding window of 4 positions).
    for _ in range(steps):
        step = mx.argmax(expected[:, -1, :], axis=-1).astype(mx.int32)[:, None]
        expected = whole_forward(whole, step, whole_cache)
        got = pipeline_forward(stages, step, stage_caches)
        assert mx.array_equal(got, expected).item()


@pytest.mark.parametrize("model_type", FAMILIES)
def test_every_family_split_in_three_equals_the_whole_model(
    tmp_path: Path, model_type: str
) -> None:
    model_dir = write_random_model(tmp_path / model_type, tiny_config(model_type), seed=3,
                                   scale=4.0)
    assert_stages_equal_whole(model_dir, [0, 1, 3, 4])


@pytest.mark.parametrize("model_type", ["qwen3", "gemma3_text"])
def test_quantized_checkpoints_split_like_the_whole(tmp_path: Path, model_type: str) -> None:
    model_dir = write_random_model(tmp_path / model_type, tiny_config(model_type), seed=5,
                                   quantize_bits=4)
    assert_stages_equal_whole(model_dir, [0, 2, 4], steps=2)


def test_each_stage_holds_only_its_own_weights(tmp_path: Path) -> None:
    model_dir = write_random_model(tmp_path / "q", tiny_config("qwen2"), seed=1)  # tied
    first, middle, last = load_stages(model_dir, [0, 1, 3, 4])
    names = [{name.rsplit(".", 1)[0].split(".layers.")[0]
              for name in dict(tree_flatten(stage.stage.model.parameters()))}
             for stage in (first, middle, last)]
    assert names[0] == {"model.embed_tokens", "model"}
    assert names[1] == {"model"}
    # Tied embeddings: the last stage needs the embedding matrix as its head.
    assert names[2] == {"model", "model.embed_tokens", "model.norm"}
    assert [stage.n_layers_here for stage in (first, middle, last)] == [1, 2, 1]


def test_untied_heads_stay_off_the_first_stage(tmp_path: Path) -> None:
    model_dir = write_random_model(tmp_path / "p", tiny_config("phi3"), seed=1)
    first, last = load_stages(model_dir, [0, 2, 4])
    assert "lm_head" not in first.stage.model and "embed_tokens" not in last.stage.model.model
    assert "lm_head" in last.stage.model


def test_activations_travel_in_the_model_dtype(tmp_path: Path) -> None:
    config = tiny_config("qwen3", torch_dtype="bfloat16")
    weights_dir = write_random_model(tmp_path / "f32", config, seed=2)
    loaded = mx.load(str(weights_dir / "model.safetensors"))
    assert isinstance(loaded, dict)
    mx.save_safetensors(str(weights_dir / "model.safetensors"),
                        {k: v.astype(mx.bfloat16) for k, v in loaded.items()})
    first, last = load_stages(weights_dir, [0, 2, 4])
    assert first.wire_dtype == mx.bfloat16 == last.wire_dtype
    assert hop_bytes_per_token(2048, mx.bfloat16) == 4096
    assert hop_bytes_per_token(2048, mx.float32) == 8192


@pytest.mark.parametrize("model_type", FAMILIES)
def test_one_node_computes_a_row_of_a_padded_batch_as_it_computes_it_alone(
    tmp_path: Path, model_type: str
) -> None:
    """Continuous batching left-pads rows; padding must not leak into another row (mlx-lm
    0.32's Gemma 2 attention let it, so Gemma 2 runs as the family's own stage)."""
    model_dir = write_random_model(tmp_path / model_type, tiny_config(model_type), seed=3,
                                   scale=4.0)
    whole = one_node(model_dir)
    batched = whole_forward(whole, mx.array(PROMPT, dtype=mx.int32), whole.make_cache(PADDING))
    alone = whole_forward(whole, mx.array([PROMPT[1][PADDING[1]:]], dtype=mx.int32),
                          whole.make_cache([0]))
    assert mx.allclose(batched[1, PADDING[1]:], alone[0], atol=1e-4).item()
