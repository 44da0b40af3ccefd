import json
from pathlib import Path

import mlx.core as mx
import pytest

from skulk.testing.queue_group import QueueGroup, shared_state
from skulk.testing.random_llama import (
    tiny_llama_config,
    write_random_llama,
)
from skulk.worker.engines.mlx.collectives import SoloGroup
from skulk.worker.engines.mlx.families.registry import UnknownModelFamily
from skulk.worker.engines.mlx.shard import WholeModelShard
from skulk.worker.engines.mlx.shard_loader import load_shard


def test_one_rank_gets_the_whole_model(tmp_path: Path) -> None:
    model_dir = write_random_llama(tmp_path / "m", tiny_llama_config(n_layers=2), seed=0)
    shard = load_shard(model_dir, SoloGroup(), 0, 2, "pipeline")
    assert isinstance(shard, WholeModelShard) and shard.decides
    logits = shard.forward(mx.array([[1, 2]], dtype=mx.int32), shard.make_cache([0]))
    assert logits is not None and logits.shape == (1, 2, 256)


def test_one_rank_must_run_every_layer(tmp_path: Path) -> None:
    model_dir = write_random_llama(tmp_path / "m", tiny_llama_config(n_layers=2), seed=0)
    with pytest.raises(ValueError, match=r"expected \[0, 2\)"):
        load_shard(model_dir, SoloGroup(), 0, 1, "pipeline")


def test_a_tensor_split_must_cover_every_layer(tmp_path: Path) -> None:
    model_dir = write_random_llama(tmp_path / "m", tiny_llama_config(n_layers=2), seed=0)
    with pytest.raises(ValueError, match="a tensor split holds every layer"):
        load_shard(model_dir, SoloGroup(), 1, 2, "tensor")


def test_unknown_families_are_refused_before_a_split_loads(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mamba",
                                                      "num_hidden_layers": 4}))
    with pytest.raises(UnknownModelFamily, match="mamba: pipeline sharding not supported"):
        load_shard(tmp_path, QueueGroup(0, 2, shared_state(2)), 0, 2, "pipeline")


def test_a_whole_model_of_any_family_goes_to_mlx_lm(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mamba",
                                                      "num_hidden_layers": 4}))
    with pytest.raises(FileNotFoundError, match="No safetensors"):  # mlx-lm's own words
        load_shard(tmp_path, SoloGroup(), 0, 4, "pipeline")


def test_a_directory_without_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_shard(tmp_path, SoloGroup(), 0, 1, "pipeline")
