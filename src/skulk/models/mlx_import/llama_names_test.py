import numpy as np
import pytest

from skulk.models.mlx_import.conftest import llama_cpp_permute
from skulk.models.mlx_import.llama_names import map_llama_name, unpermute_rows


def test_names_map_to_hugging_face_llama() -> None:
    assert map_llama_name("token_embd.weight").hf_name == "model.embed_tokens.weight"
    assert map_llama_name("output.weight").hf_name == "lm_head.weight"
    q = map_llama_name("blk.12.attn_q.weight")
    assert q.hf_name == "model.layers.12.self_attn.q_proj.weight" and q.unpermute == "query"
    k = map_llama_name("blk.0.attn_k.weight")
    assert k.hf_name == "model.layers.0.self_attn.k_proj.weight" and k.unpermute == "key"
    v = map_llama_name("blk.3.attn_v.weight")
    assert v.hf_name == "model.layers.3.self_attn.v_proj.weight" and v.unpermute is None
    assert map_llama_name("blk.7.ffn_norm.weight").hf_name == (
        "model.layers.7.post_attention_layernorm.weight")
    assert map_llama_name("blk.7.ffn_down.weight").hf_name == "model.layers.7.mlp.down_proj.weight"


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="blk.0.attn_qkv.weight"):
        map_llama_name("blk.0.attn_qkv.weight")
    with pytest.raises(ValueError):
        map_llama_name("rope_freqs.weight")


@pytest.mark.parametrize("n_heads", [1, 3, 9])
def test_unpermute_inverts_llama_cpp_permute(n_heads: int) -> None:
    rng = np.random.default_rng(n_heads)
    rows = rng.standard_normal((n_heads * 8, 5)).astype(np.float32)
    restored = unpermute_rows(llama_cpp_permute(rows, n_heads), n_heads)
    np.testing.assert_array_equal(restored, rows)
    # Not the identity: the interleave really moved rows.
    assert not np.array_equal(llama_cpp_permute(rows, n_heads), rows)


def test_unpermute_moves_packed_rows_and_their_scales_alike() -> None:
    packed = np.arange(24 * 3, dtype=np.uint32).reshape(24, 3)
    scales = np.arange(24, dtype=np.float32).reshape(24, 1)
    order = unpermute_rows(np.arange(24), 3)
    np.testing.assert_array_equal(unpermute_rows(packed, 3), packed[order])
    np.testing.assert_array_equal(unpermute_rows(scales, 3), scales[order])
    # Within a head of 8 rows llama.cpp's rows 0, 2, 4, 6 are the first half.
    assert order[:8].tolist() == [0, 2, 4, 6, 1, 3, 5, 7]


def test_rows_that_do_not_split_into_heads_are_refused() -> None:
    with pytest.raises(ValueError, match="heads"):
        unpermute_rows(np.zeros((10, 2), dtype=np.float32), 3)
