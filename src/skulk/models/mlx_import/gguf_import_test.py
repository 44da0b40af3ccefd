import json
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.models.llama import Model
from mlx_lm.utils import load_model

from skulk.models.mlx_import.conftest import CHAT_TEMPLATE, TinyModel
from skulk.models.mlx_import.gguf_import import Encoding, choose_encoding, import_gguf
from skulk.models.mlx_import.mlx_arrays import load_safetensors

PROMPT = [[1, 40, 80, 120, 200, 260, 2]]


def _import(tiny: TinyModel, tmp_path: Path, q_bits: int | None) -> Path:
    out = tmp_path / f"out-{q_bits}"
    out.mkdir()
    import_gguf(tiny.gguf_path, out, q_bits)
    return out


def _reference_logits(tiny: TinyModel) -> np.ndarray:
    model = Model(tiny.args)
    model.load_weights([(name, mx.array(value)) for name, value in tiny.reference.items()])
    return np.array(model(mx.array(PROMPT)))


def _imported_logits(directory: Path) -> np.ndarray:
    model, _ = load_model(directory)
    return np.array(model(mx.array(PROMPT)))


def test_encoding_is_exact_where_the_blocks_allow() -> None:
    assert choose_encoding("Q4_1", (64, 64), None) == Encoding("float32")
    assert choose_encoding("Q4_1", (64, 64), 4) == Encoding("repack", 4)
    assert choose_encoding("Q4_1", (64, 64), 8) == Encoding("repack", 8)
    assert choose_encoding("Q8_0", (64, 64), 4) == Encoding("repack", 8)
    assert choose_encoding("F16", (64, 64), 4) == Encoding("quantize", 4)
    assert choose_encoding("Q6_K", (64, 256), 8) == Encoding("quantize", 8)
    assert choose_encoding("F32", (64,), 4) == Encoding("float32")
    assert choose_encoding("F32", (64, 48), 4) == Encoding("float32")


def test_float32_import_reproduces_the_hugging_face_weights(
    tiny_gguf: TinyModel, tmp_path: Path,
) -> None:
    out = _import(tiny_gguf, tmp_path, None)
    weights = load_safetensors(out / "model.safetensors")
    assert set(weights) == set(tiny_gguf.reference)
    for name, expected in tiny_gguf.reference.items():
        np.testing.assert_array_equal(weights[name], expected, err_msg=name)
    config = json.loads((out / "config.json").read_text())
    assert config["num_key_value_heads"] == 2 and config["tie_word_embeddings"] is True
    assert "quantization" not in config
    tokenizer_config = json.loads((out / "tokenizer_config.json").read_text())
    assert tokenizer_config["chat_template"] == CHAT_TEMPLATE
    assert (tokenizer_config["bos_token"], tokenizer_config["eos_token"]) == (
        "<|im_start|>", "<|im_end|>")
    np.testing.assert_allclose(_imported_logits(out), _reference_logits(tiny_gguf),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("q_bits", [4, 8])
def test_quantized_import_repacks_without_loss(
    tiny_gguf: TinyModel, tmp_path: Path, q_bits: int,
) -> None:
    out = _import(tiny_gguf, tmp_path, q_bits)
    config = json.loads((out / "config.json").read_text())
    assert config["quantization"]["bits"] == q_bits
    if q_bits == 4:  # the Q8_0 embedding keeps its 8 bits
        assert config["quantization"]["model.embed_tokens"] == {"group_size": 32, "bits": 8}
    model, _ = load_model(out)
    q_proj = model.model.layers[1].self_attn.q_proj
    restored = mx.dequantize(q_proj.weight, q_proj.scales, q_proj.biases,
                             group_size=32, bits=q_bits)
    np.testing.assert_array_equal(
        np.array(restored), tiny_gguf.reference["model.layers.1.self_attn.q_proj.weight"])
    assert q_proj.scales.dtype == mx.float32
    logits = np.array(model(mx.array(PROMPT)))
    np.testing.assert_allclose(logits, _reference_logits(tiny_gguf), rtol=1e-3, atol=1e-3)


def test_other_architectures_are_refused_saying_what_to_import_instead(tmp_path: Path) -> None:
    from gguf import GGUFWriter

    path = tmp_path / "qwen.gguf"
    writer = GGUFWriter(str(path), "qwen2")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ValueError, match="'qwen2' is not supported yet: the GGUF importer "
                       "maps llama only.*mlx-community repository"):
        import_gguf(path, out, None)
