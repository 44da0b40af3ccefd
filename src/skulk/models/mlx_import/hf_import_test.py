import json
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.utils import load_model

from skulk.models.mlx_import.conftest import MERGES, SPECIALS, TinyModel, tiny_tokens
from skulk.models.mlx_import.hf_import import import_hf_directory
from skulk.models.mlx_import.mlx_arrays import load_safetensors
from skulk.models.mlx_import.tokenizer_build import GgufVocabulary, write_tokenizer

PROMPT = mx.array([[1, 40, 80, 120, 260]])


def _hf_directory(tiny: TinyModel, root: Path, dtype: mx.Dtype) -> Path:
    """A Hugging Face style checkpoint of the tiny model, split over two files."""
    source = root / f"hf-{dtype}"
    source.mkdir()
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
              "vocab_size": len(tiny_tokens()), "rope_theta": 10000.0,
              "tie_word_embeddings": True, "torch_dtype": "bfloat16"}
    (source / "config.json").write_text(json.dumps(config))
    names = sorted(tiny.reference)
    for index, part in enumerate((names[: len(names) // 2], names[len(names) // 2 :])):
        mx.save_safetensors(str(source / f"model-{index}.safetensors"),
                            {name: mx.array(tiny.reference[name]).astype(dtype)
                             for name in part})
    vocabulary = GgufVocabulary(
        tokens=tiny_tokens(), token_types=[3] * 3 + [1] * (len(tiny_tokens()) - 3),
        merges=MERGES, pre_tokenizer="smollm", add_prefix_space=False, bos_token_id=1,
        add_bos_token=False)
    write_tokenizer(vocabulary, source)
    (source / "tokenizer_config.json").write_text(json.dumps({"eos_token": SPECIALS[2]}))
    return source


def test_float_checkpoint_becomes_float32(tiny_gguf: TinyModel, tmp_path: Path) -> None:
    source = _hf_directory(tiny_gguf, tmp_path, mx.bfloat16)
    out = tmp_path / "out"
    out.mkdir()
    written = import_hf_directory(source, out, None)
    assert written.files == ["model.safetensors"]
    weights = load_safetensors(out / "model.safetensors")
    name = "model.layers.0.self_attn.k_proj.weight"
    assert weights[name].dtype == np.float32
    expected = np.array(mx.array(tiny_gguf.reference[name]).astype(mx.bfloat16)
                        .astype(mx.float32))
    np.testing.assert_array_equal(weights[name], expected)
    assert json.loads((out / "config.json").read_text())["torch_dtype"] == "float32"
    assert (out / "tokenizer.json").is_file() and (out / "tokenizer_config.json").is_file()
    model, _ = load_model(out)
    assert np.isfinite(np.array(model(PROMPT))).all()


def test_quantized_import_records_bits_and_stays_close(
    tiny_gguf: TinyModel, tmp_path: Path,
) -> None:
    source = _hf_directory(tiny_gguf, tmp_path, mx.float32)
    outs = {}
    for q_bits in (None, 8):
        outs[q_bits] = tmp_path / f"out-{q_bits}"
        outs[q_bits].mkdir()
        import_hf_directory(source, outs[q_bits], q_bits)
    config = json.loads((outs[8] / "config.json").read_text())
    assert config["quantization"] == {"group_size": 32, "bits": 8}
    quantized, _ = load_model(outs[8])
    assert quantized.model.layers[0].mlp.up_proj.scales.dtype == mx.float32
    float_model, _ = load_model(outs[None])
    # 8-bit rounding moves logits a little, never wholesale.
    difference = np.abs(np.array(quantized(PROMPT)) - np.array(float_model(PROMPT)))
    assert difference.max() < 0.1 and difference.mean() < 0.02


def test_unusable_directories_are_refused(tiny_gguf: TinyModel, tmp_path: Path) -> None:
    source = _hf_directory(tiny_gguf, tmp_path, mx.float32)
    out = tmp_path / "out"
    out.mkdir()
    (source / "tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match="tokenizer"):
        import_hf_directory(source, out, None)
    config = json.loads((source / "config.json").read_text())
    (source / "config.json").write_text(json.dumps({**config, "model_type": "no-such-arch"}))
    with pytest.raises(ValueError, match="no-such-arch"):
        import_hf_directory(source, out, None)
    (source / "config.json").write_text(json.dumps(
        {**config, "quantization": {"group_size": 64, "bits": 4}}))
    with pytest.raises(ValueError, match="already quantized"):
        import_hf_directory(source, out, 8)
