import pytest

from skulk.worker.engines.mlx.families.llama.weights import (
    local_path,
    select_weights,
    stage_spec,
)

CHECKPOINT = [
    "model.embed_tokens.weight", "model.embed_tokens.scales", "model.norm.weight",
    "lm_head.weight", "model.layers.0.self_attn.q_proj.weight",
    "model.layers.1.self_attn.rotary_emb.inv_freq", "model.layers.2.mlp.up_proj.weight",
    "model.layers.2.mlp.up_proj.scales", "model.layers.3.input_layernorm.weight",
    "model.layers.5.post_attention_layernorm.weight",
]


def weights_of(rank: int, size: int, start: int, end: int, tied: bool) -> dict[str, str]:
    spec = stage_spec(rank=rank, size=size, start_layer=start, end_layer=end, n_layers=6,
                      tied=tied)
    return select_weights({name: name for name in CHECKPOINT}, spec)


def test_first_stage_keeps_embedding_and_its_layers_renamed() -> None:
    assert weights_of(0, 3, 0, 2, tied=True) == {
        "embed_tokens.weight": "model.embed_tokens.weight",
        "embed_tokens.scales": "model.embed_tokens.scales",
        "layers.0.self_attn.q_proj.weight": "model.layers.0.self_attn.q_proj.weight",
    }


def test_middle_stage_renumbers_its_layers_from_zero() -> None:
    assert weights_of(1, 3, 2, 4, tied=True) == {
        "layers.0.mlp.up_proj.weight": "model.layers.2.mlp.up_proj.weight",
        "layers.0.mlp.up_proj.scales": "model.layers.2.mlp.up_proj.scales",
        "layers.1.input_layernorm.weight": "model.layers.3.input_layernorm.weight",
    }


def test_last_stage_with_tied_embeddings_takes_the_embedding_as_head() -> None:
    assert weights_of(2, 3, 4, 6, tied=True) == {
        "embed_tokens.weight": "model.embed_tokens.weight",
        "embed_tokens.scales": "model.embed_tokens.scales",
        "norm.weight": "model.norm.weight",
        "layers.1.post_attention_layernorm.weight":
            "model.layers.5.post_attention_layernorm.weight",
    }


def test_last_stage_with_its_own_head_skips_the_embedding() -> None:
    kept = weights_of(2, 3, 4, 6, tied=False)
    assert set(kept) == {"lm_head.weight", "norm.weight",
                         "layers.1.post_attention_layernorm.weight"}


def test_a_single_stage_keeps_everything_but_rotary_frequencies() -> None:
    kept = weights_of(0, 1, 0, 6, tied=False)
    assert len(kept) == len(CHECKPOINT) - 1
    assert not any("inv_freq" in name for name in kept)


def test_module_paths_of_quantization_overrides_rename_like_tensors() -> None:
    spec = stage_spec(rank=1, size=2, start_layer=3, end_layer=6, n_layers=6, tied=True)
    assert local_path("model.layers.4.mlp.down_proj", spec) == "layers.1.mlp.down_proj"
    assert local_path("model.layers.2.mlp.down_proj", spec) is None
    assert local_path("lm_head", spec) is None


def test_unknown_tensor_names_are_refused() -> None:
    spec = stage_spec(rank=0, size=1, start_layer=0, end_layer=6, n_layers=6, tied=True)
    with pytest.raises(ValueError, match="not a tensor of a Llama checkpoint"):
        local_path("transformer.h.0.attn.c_attn.weight", spec)


@pytest.mark.parametrize(("rank", "size", "start", "end", "message"), [
    (0, 2, 1, 3, "must start at layer 0"),
    (1, 2, 3, 5, "must end at layer 6"),
    (1, 3, 3, 3, "not a non-empty range"),
    (1, 3, 4, 7, "not a non-empty range"),
])
def test_ranges_that_cannot_form_a_pipeline_are_refused(
    rank: int, size: int, start: int, end: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        stage_spec(rank=rank, size=size, start_layer=start, end_layer=end, n_layers=6,
                   tied=True)
