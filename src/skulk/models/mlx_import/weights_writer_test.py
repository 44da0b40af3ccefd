import json
from pathlib import Path

import numpy as np
import pytest

from skulk.models.mlx_import.block_repack import PackedWeight
from skulk.models.mlx_import.mlx_arrays import load_safetensors
from skulk.models.mlx_import.weights_writer import WeightsWriter


def _packed(bits: int) -> PackedWeight:
    return PackedWeight(weight=np.zeros((4, bits), dtype=np.uint32),
                        scales=np.ones((4, 1), dtype=np.float32),
                        biases=np.zeros((4, 1), dtype=np.float32), bits=bits)


def test_small_shards_get_an_index(tmp_path: Path) -> None:
    writer = WeightsWriter(tmp_path, shard_bytes=100)
    for index in range(3):
        writer.add(f"t{index}", np.full((40,), index, dtype=np.float32))  # 160 bytes each
    written = writer.close()
    assert written.files == [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    assert written.weight_bytes == 480 and written.tensor_count == 3
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert index["weight_map"]["t2"] == "model-00003-of-00003.safetensors"
    assert load_safetensors(tmp_path / written.files[1])["t1"][0] == 1.0


def test_one_file_when_it_fits_and_duplicates_are_refused(tmp_path: Path) -> None:
    writer = WeightsWriter(tmp_path)
    writer.add("a", np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="twice"):
        writer.add("a", np.zeros(3, dtype=np.float32))
    assert writer.close().files == ["model.safetensors"]
    with pytest.raises(ValueError, match="no tensors"):
        WeightsWriter(tmp_path / "x").close()


def test_quantization_block_lists_only_modules_that_differ(tmp_path: Path) -> None:
    writer = WeightsWriter(tmp_path)
    writer.add_quantized("model.layers.0.mlp.up_proj", _packed(4))
    writer.add_quantized("model.embed_tokens", _packed(8))
    assert writer.quantization(4) == {
        "group_size": 32, "bits": 4, "model.embed_tokens": {"group_size": 32, "bits": 8}}
    assert WeightsWriter(tmp_path).quantization(None) is None
