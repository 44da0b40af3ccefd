from skulk.testing.random_llama import tiny_llama_config
from skulk.worker.engines.mlx.families.tensor import tensor_split_error

SMOLLM2_SHAPE = tiny_llama_config(hidden_size=576, heads=9, kv_heads=3, intermediate_size=1536)


def test_heads_that_do_not_divide_are_refused_with_the_reason() -> None:
    error = tensor_split_error(SMOLLM2_SHAPE, 2)
    assert error is not None and "9 query heads and 3 KV heads" in error


def test_three_ranks_split_nine_heads() -> None:
    assert tensor_split_error(SMOLLM2_SHAPE, 3) is None
    assert tensor_split_error({**SMOLLM2_SHAPE, "quantization": {"group_size": 32, "bits": 4}},
                              3) is None


def test_quantization_groups_must_fit_the_per_rank_slices() -> None:
    config = {**tiny_llama_config(hidden_size=96, heads=3, kv_heads=3, intermediate_size=192),
              "quantization": {"group_size": 64, "bits": 4}}
    error = tensor_split_error(config, 3)
    assert error is not None and "group size 64" in error


def test_head_dims_apart_from_the_hidden_width_count_in_the_slices() -> None:
    # Qwen3-like: 4 heads of 24 = 96 attention columns, 48 per rank of 2.
    config = {**tiny_llama_config(hidden_size=64, heads=4, kv_heads=2, intermediate_size=128),
              "head_dim": 24, "quantization": {"group_size": 32, "bits": 4}}
    error = tensor_split_error(config, 2)
    assert error is not None and "slice of 48 columns" in error
