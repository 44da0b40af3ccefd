from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.quants import dequantize as gguf_dequantize

from skulk.models.mlx_import.conftest import CHAT_TEMPLATE, MERGES, TinyModel, tiny_tokens
from skulk.models.mlx_import.gguf_file import GgufFile, dequantize


def test_metadata_reads_like_the_gguf_package(tiny_gguf: TinyModel) -> None:
    gguf = GgufFile(tiny_gguf.gguf_path)
    reader = GGUFReader(str(tiny_gguf.gguf_path))
    assert gguf.string("general.architecture") == "llama"
    assert gguf.integer("llama.attention.head_count_kv") == 2
    assert gguf.number("llama.attention.layer_norm_rms_epsilon") == pytest.approx(1e-5)
    assert gguf.strings("tokenizer.ggml.tokens") == tiny_tokens()
    assert gguf.strings("tokenizer.ggml.merges") == MERGES
    assert gguf.integers("tokenizer.ggml.token_type") == list(
        reader.fields["tokenizer.ggml.token_type"].contents())
    assert gguf.string("tokenizer.chat_template") == CHAT_TEMPLATE
    assert gguf.boolean("tokenizer.ggml.add_bos_token", True) is False
    assert gguf.boolean("tokenizer.ggml.absent", True) is True
    with pytest.raises(ValueError, match="not an integer"):
        gguf.integer("general.architecture")
    with pytest.raises(ValueError, match="nope"):
        gguf.string("nope")


def test_tensors_dequantize_like_the_gguf_package(tiny_gguf: TinyModel) -> None:
    tensors = {tensor.name: tensor for tensor in GgufFile(tiny_gguf.gguf_path).tensors()}
    reference = GGUFReader(str(tiny_gguf.gguf_path)).tensors
    assert [t.name for t in reference] == list(tensors)
    for expected in reference:
        mine = tensors[expected.name]
        assert mine.kind == expected.tensor_type.name
        values = np.asarray(gguf_dequantize(expected.data, expected.tensor_type))
        np.testing.assert_array_equal(dequantize(mine), values.reshape(mine.shape))
    assert tensors["blk.0.attn_q.weight"].shape == (64, 64)
    assert tensors["token_embd.weight"].shape == (len(tiny_tokens()), 64)


def test_foreign_and_truncated_files_are_refused(tiny_gguf: TinyModel, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.gguf"
    foreign.write_bytes(b"PK\x03\x04" + b"\0" * 60)
    with pytest.raises(ValueError, match="foreign.gguf"):
        GgufFile(foreign)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(tiny_gguf.gguf_path.read_bytes()[:5000])
    with pytest.raises(ValueError, match="truncated.gguf"):
        GgufFile(truncated)
