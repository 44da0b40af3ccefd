import pytest

from skulk.worker.engines.mlx.families.stage_spec import layer_local_name, stage_spec


def test_layers_are_renumbered_from_the_stage_start_and_others_dropped() -> None:
    spec = stage_spec(rank=1, size=3, start_layer=2, end_layer=4, n_layers=6)
    assert layer_local_name("model.layers.3.mlp.up_proj.scales", spec) == \
        "model.layers.1.mlp.up_proj.scales"
    assert layer_local_name("model.layers.2.mlp.down_proj", spec) == "model.layers.0.mlp.down_proj"
    assert layer_local_name("model.layers.4.mlp.up_proj.weight", spec) is None
    assert layer_local_name("model.layers.1.input_layernorm.weight", spec) is None
    # Outside the layer list names stay; whether the stage keeps them is the loader's call.
    assert layer_local_name("model.norm.weight", spec) == "model.norm.weight"
    assert layer_local_name("lm_head.weight", spec) == "lm_head.weight"


def test_what_each_rank_holds() -> None:
    first = stage_spec(rank=0, size=2, start_layer=0, end_layer=3, n_layers=6)
    last = stage_spec(rank=1, size=2, start_layer=3, end_layer=6, n_layers=6)
    assert (first.embeds, first.heads, last.embeds, last.heads) == (True, False, False, True)
    assert first.n_layers == 3


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
        stage_spec(rank=rank, size=size, start_layer=start, end_layer=end, n_layers=6)
