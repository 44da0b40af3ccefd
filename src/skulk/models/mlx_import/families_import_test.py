"""Every family the MLX engines split imports from a Hugging Face checkpoint (bfloat16, as
published) and from an mlx-lm-quantized one (as mlx-community publishes), and loads in
mlx-lm and as pipeline stages."""

import json
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.utils import load_model

from skulk.models.mlx_import.hf_import import import_hf_directory
from skulk.testing.family_checkpoint import write_family_checkpoint
from skulk.testing.random_family import FAMILIES

PROMPT = mx.array([[1, 40, 80, 120, 260, 7]])


@pytest.mark.parametrize("model_type", FAMILIES)
def test_a_published_checkpoint_of_every_family_imports_as_float32(
    tmp_path: Path, model_type: str
) -> None:
    source = write_family_checkpoint(tmp_path / "hf", model_type)
    out = tmp_path / "out"
    out.mkdir()
    import_hf_directory(source, out, None)
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == model_type and config["torch_dtype"] == "float32"
    imported, _ = load_model(out)
    published, _ = load_model(source)
    # bf16 widened to fp32 computes at least as precisely: the same greedy tokens.
    got = np.array(imported(PROMPT)).argmax(-1)
    want = np.array(published(PROMPT).astype(mx.float32)).argmax(-1)
    assert np.mean(got == want) >= 0.8


def test_an_mlx_community_style_quantized_repo_is_accepted(tmp_path: Path) -> None:
    source = write_family_checkpoint(tmp_path / "hf", "qwen3", mlx_quantized_bits=4)
    out = tmp_path / "out"
    out.mkdir()
    import_hf_directory(source, out, None)
    config = json.loads((out / "config.json").read_text())
    assert config["quantization"]["bits"] == 4
    model, _ = load_model(out)
    assert model.model.layers[0].mlp.up_proj.bits == 4
    assert model.model.layers[0].mlp.up_proj.scales.dtype == mx.float32


def test_foreign_quantization_is_refused_with_its_name(tmp_path: Path) -> None:
    source = write_family_checkpoint(tmp_path / "hf", "qwen2")
    config = json.loads((source / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gptq", "bits": 4}
    (source / "config.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ValueError, match="gptq"):
        import_hf_directory(source, out, None)
