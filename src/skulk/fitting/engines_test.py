import subprocess
import sys
from typing import get_args

import pytest

from skulk.fitting.engines import (
    ENGINE_PREFERENCE,
    LLAMA_CPP_FIT,
    MLX_FIT,
    PLACEABLE,
    engine_fit,
)
from skulk.shared.types.model_cards import EngineName
from skulk.worker.engines import registry


def test_the_wire_names_exactly_the_placeable_engines_in_preference_order() -> None:
    assert set(get_args(EngineName)) == set(ENGINE_PREFERENCE)
    assert [engine.name for engine in PLACEABLE] == list(ENGINE_PREFERENCE)
    assert ENGINE_PREFERENCE[0] == "llama_cpp"  # ~10x faster decoding on a CPU
    assert engine_fit("mlx") is MLX_FIT


def test_an_unknown_engine_is_refused_naming_the_placeable_ones() -> None:
    with pytest.raises(ValueError, match="unknown engine 'echo'.*llama_cpp, mlx"):
        engine_fit("echo")


def test_each_placeable_engine_s_description_holds_its_fit() -> None:
    # The worker reads the same figures placement does: they are declared once, here.
    assert [description.fit for description in registry.PLACEABLE] == list(PLACEABLE)
    for fit in PLACEABLE:
        assert registry.engine_description(fit.name).fit is fit


def test_the_default_batch_is_what_the_engine_s_options_say_with_no_flags() -> None:
    for fit in PLACEABLE:
        options = registry.engine_description(fit.name).options
        assert options.parse({}).batch_size() == fit.default_batch


def test_shapes_an_engine_runs() -> None:
    assert LLAMA_CPP_FIT.runs_as("pipeline", 3) and not LLAMA_CPP_FIT.runs_as("tensor", 2)
    assert LLAMA_CPP_FIT.shape_refusal("tensor", 2) == "llama_cpp does not split a model by tensor"
    assert MLX_FIT.runs_as("tensor", 2) and MLX_FIT.shape_refusal("tensor", 2) is None
    # llama.cpp's head runs the model; the other ranks only serve their device to it.
    assert LLAMA_CPP_FIT.runs_model(0, 2) and not LLAMA_CPP_FIT.runs_model(1, 2)
    assert MLX_FIT.runs_model(1, 2)
    assert MLX_FIT.split_refusal is not None
    assert MLX_FIT.split_refusal("phi3", "tensor", 2) is None
    assert MLX_FIT.split_refusal("no_such_family", "tensor", 2) is not None


def test_placement_reads_the_engines_and_families_without_loading_an_engine() -> None:
    # The master places in the node process: neither MLX nor llama.cpp may load there.
    code = ("import sys\n"
            "import skulk.master.placement\n"
            "from skulk.fitting.engines import MLX_FIT\n"
            "assert MLX_FIT.split_refusal is not None\n"
            "assert MLX_FIT.split_refusal('qwen3', 'tensor', 2) is None\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('mlx', 'mlx_lm', 'llama_cpp'))\n"
            "assert not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
