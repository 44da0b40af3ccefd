import subprocess
import sys
from pathlib import Path

import pytest

from skulk.model_families.family import ModelFamily
from skulk.model_families.registry import (
    SHARED_MODULES,
    families,
    find_family,
    known_model_types,
    split_refusal,
)
from skulk.testing.pipeline_only_family import register_pipeline_only_family

PACKAGE = Path(__file__).parent


def test_every_module_of_the_package_is_a_registered_family() -> None:
    # Listed from the folder, not the way the registry finds them: a family module the
    # registry skipped would show here.
    modules = {path.stem for path in PACKAGE.glob("*.py")
               if path.stem not in SHARED_MODULES | {"__init__"}
               and not path.stem.endswith("_test")}
    assert modules == set(families()) == known_model_types()
    assert {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3"} <= modules
    for model_type, family in families().items():
        assert isinstance(family, ModelFamily)
        assert family.model_type == model_type
        assert "pipeline" in family.splits  # every family splits by layers at least
    assert find_family("qwen3_moe") is None


def test_reading_the_families_does_not_import_mlx() -> None:
    # Placement reads them in the node process, where MLX would cost memory and threads.
    code = ("import sys\n"
            "from skulk.model_families.registry import families\n"
            "assert len(families()) >= 7\n"
            "loaded = sorted(m for m in sys.modules if m == 'mlx' or m.startswith('mlx.'))\n"
            "assert not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_placement_refusals_say_which_split_is_missing() -> None:
    assert split_refusal("qwen3_moe", "pipeline", 1) is None  # whole: mlx-lm runs it
    refusal = split_refusal("qwen3_moe", "pipeline", 2)
    assert refusal is not None and refusal.startswith(
        "qwen3_moe: pipeline sharding not supported yet")
    assert split_refusal("phi3", "pipeline", 3) is None
    assert split_refusal("qwen3", "tensor", 2) is None
    assert split_refusal("phi3", "tensor", 2) is None  # fused qkv, split block by block
    assert split_refusal("gemma2", "tensor", 2) is None  # its mask, fixed per layer


def test_a_family_that_splits_by_layers_only_is_refused_a_head_split(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    layers_only = register_pipeline_only_family(monkeypatch)
    assert split_refusal(layers_only, "pipeline", 2) is None
    tensor = split_refusal(layers_only, "tensor", 2)
    assert tensor is not None and "use a pipeline split" in tensor


@pytest.mark.parametrize("model_type", sorted(known_model_types()))
def test_each_family_declares_its_tiny_model(model_type: str) -> None:
    family = families()[model_type]
    assert "model_type" not in family.tiny_config  # the registry's key says it
    assert all(isinstance(value, bool | int | float | str)
               for value in family.tiny_config.values())
