import json

import pytest

from skulk.models.store.layer_files import (
    covers,
    files_for_layers,
    layer_of,
    layers_directory,
    weight_map_of,
)

WEIGHT_MAP = {
    "model.embed_tokens.weight": "model-00001-of-00003.safetensors",
    "model.layers.0.self_attn.q_proj.weight": "model-00001-of-00003.safetensors",
    "model.layers.1.self_attn.q_proj.weight": "model-00001-of-00003.safetensors",
    "model.layers.1.mlp.down_proj.weight": "model-00002-of-00003.safetensors",
    "model.layers.2.mlp.down_proj.weight": "model-00002-of-00003.safetensors",
    "model.layers.3.mlp.down_proj.weight": "model-00003-of-00003.safetensors",
    "model.norm.weight": "model-00003-of-00003.safetensors",
}


def test_layer_of_reads_the_layer_number_and_none_outside_the_layers() -> None:
    assert layer_of("model.layers.12.mlp.gate_proj.weight") == 12
    assert layer_of("layers.0.attention.wq.weight") == 0
    assert layer_of("model.embed_tokens.weight") is None
    assert layer_of("lm_head.weight") is None
    assert layer_of("model.norm.weight") is None


def test_a_stage_needs_its_layers_files_and_every_file_with_a_non_layer_tensor() -> None:
    assert files_for_layers(WEIGHT_MAP, 0, 1) == {"model-00001-of-00003.safetensors",
                                                  "model-00003-of-00003.safetensors"}
    # Layer 1 straddles two files: both are needed.
    assert files_for_layers(WEIGHT_MAP, 1, 2) == {"model-00001-of-00003.safetensors",
                                                  "model-00002-of-00003.safetensors",
                                                  "model-00003-of-00003.safetensors"}
    assert files_for_layers(WEIGHT_MAP, 2, 4) == {"model-00001-of-00003.safetensors",
                                                  "model-00002-of-00003.safetensors",
                                                  "model-00003-of-00003.safetensors"}


def test_a_single_file_model_needs_that_file() -> None:
    single = {name: "model.safetensors" for name in WEIGHT_MAP}
    assert files_for_layers(single, 2, 3) == {"model.safetensors"}


def test_an_empty_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\[2, 2\)"):
        files_for_layers(WEIGHT_MAP, 2, 2)


def test_the_weight_map_is_read_from_the_index_and_a_malformed_index_is_refused() -> None:
    index = json.dumps({"metadata": {"total_size": 1}, "weight_map": WEIGHT_MAP}).encode()
    assert weight_map_of(index) == WEIGHT_MAP
    with pytest.raises(ValueError, match="weight_map"):
        weight_map_of(b'{"metadata": {}}')
    with pytest.raises(ValueError, match="weight_map"):
        weight_map_of(b'{"weight_map": {"a": 1}}')


def test_a_partial_copy_is_named_after_the_whole_copy_and_its_layers() -> None:
    assert layers_directory("qwen-mlx", (0, 14)) == "qwen-mlx-layers-0-14"
    assert layers_directory("qwen-mlx-layers-0-14", (14, 28)) == "qwen-mlx-layers-14-28"
    assert layers_directory("qwen-mlx-layers-0-14", None) == "qwen-mlx"


def test_a_whole_copy_covers_everything_and_a_stage_copy_only_ranges_inside_it() -> None:
    assert covers(None, None) and covers(None, (3, 5))
    assert covers((0, 8), (0, 8)) and covers((0, 8), (2, 5))
    assert not covers((0, 8), None)
    assert not covers((0, 8), (6, 9)) and not covers((4, 8), (2, 6))
