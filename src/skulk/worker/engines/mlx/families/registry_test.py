import pytest

from skulk.model_families.registry import known_model_types
from skulk.testing.random_family import FAMILIES, tiny_config
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.families.registry import (
    UnknownModelFamily,
    family_for,
    family_for_config,
)


def test_families_are_found_by_model_type() -> None:
    assert family_for("qwen2").name == "qwen2"
    assert family_for("mistral").name == "mistral"


def test_unknown_families_are_refused_naming_what_is_supported() -> None:
    with pytest.raises(UnknownModelFamily, match=r"qwen3_moe: pipeline sharding not "
                       r"supported yet.*supports gemma2"):
        family_for("qwen3_moe")


def test_a_config_without_model_type_is_refused() -> None:
    with pytest.raises(UnknownModelFamily, match="no model_type"):
        family_for_config({"hidden_size": 64})



def test_every_registered_family_has_mlx_lm_code_and_a_tiny_model() -> None:
    for kind in known_model_types():
        assert mlx_api.has_model_code(kind), kind
        model = mlx_api.new_model(tiny_config(kind, n_layers=2))
        assert len(model.model.layers) == 2, kind
    assert frozenset(FAMILIES) == known_model_types()
    assert not mlx_api.has_model_code("no_such_family")
