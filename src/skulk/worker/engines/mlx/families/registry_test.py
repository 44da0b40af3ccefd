import pytest

from skulk.testing.random_family import FAMILIES
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.families.registry import (
    UnknownModelFamily,
    family_for,
    family_for_config,
    known_model_types,
)
from skulk.worker.engines.mlx.families.support import SPLITS, split_refusal


def test_families_are_found_by_model_type() -> None:
    assert family_for("qwen2").name == "qwen2"
    assert family_for("mistral").name == "mistral"


def test_the_placement_table_names_exactly_the_registered_families() -> None:
    assert known_model_types() == frozenset(SPLITS)
    # Each has mlx-lm model code, and a tiny model in the per-family tests.
    assert all(mlx_api.has_model_code(kind) for kind in SPLITS)
    assert frozenset(FAMILIES) == frozenset(SPLITS)
    assert not mlx_api.has_model_code("no_such_family")


def test_unknown_families_are_refused_naming_what_is_supported() -> None:
    with pytest.raises(UnknownModelFamily, match=r"qwen3_moe: pipeline sharding not "
                       r"supported yet.*supports gemma2"):
        family_for("qwen3_moe")


def test_a_config_without_model_type_is_refused() -> None:
    with pytest.raises(UnknownModelFamily, match="no model_type"):
        family_for_config({"hidden_size": 64})


def test_placement_refusals_say_which_split_is_missing() -> None:
    assert split_refusal("qwen3_moe", "pipeline", 1) is None  # whole: mlx-lm runs it
    refusal = split_refusal("qwen3_moe", "pipeline", 2)
    assert refusal is not None and refusal.startswith(
        "qwen3_moe: pipeline sharding not supported yet")
    assert split_refusal("phi3", "pipeline", 3) is None
    tensor = split_refusal("phi3", "tensor", 2)
    assert tensor is not None and "use a pipeline split" in tensor
    assert split_refusal("qwen3", "tensor", 2) is None
