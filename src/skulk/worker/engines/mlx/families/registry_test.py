import pytest

from skulk.worker.engines.mlx.families.llama import LLAMA
from skulk.worker.engines.mlx.families.registry import (
    UnknownModelFamily,
    family_for,
    family_for_config,
    known_model_types,
)


def test_llama_is_found_by_model_type() -> None:
    assert family_for("llama") is LLAMA
    assert "llama" in known_model_types()


def test_unknown_families_are_refused_naming_what_is_supported() -> None:
    with pytest.raises(UnknownModelFamily, match=r"'gpt2'.*supports llama"):
        family_for("gpt2")


def test_a_config_without_model_type_is_refused() -> None:
    with pytest.raises(UnknownModelFamily, match="no model_type"):
        family_for_config({"hidden_size": 64})
