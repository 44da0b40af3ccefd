import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize

from skulk.models.mlx_import import mlx_arrays
from skulk.models.mlx_import.block_repack import block_values, pack_codes, repack

ROWS, COLUMNS = 6, 96


def _gguf(kind: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Real GGUF blocks of a random matrix, and what llama.cpp's dequantizer makes of them."""
    qtype = GGMLQuantizationType[kind]
    values = np.random.default_rng(seed).standard_normal((ROWS, COLUMNS)).astype(np.float32)
    blocks = quantize(values, qtype)
    return blocks, np.asarray(dequantize(blocks, qtype), dtype=np.float32)


@pytest.mark.parametrize(("kind", "bits"), [("Q4_1", 4), ("Q4_0", 4), ("Q8_0", 8),
                                            ("Q4_1", 8)])
def test_repacked_blocks_dequantize_to_exactly_the_gguf_values(kind: str, bits: int) -> None:
    blocks, expected = _gguf(kind)
    packed = repack(kind, blocks, bits)
    assert packed.weight.dtype == np.uint32 and packed.weight.shape == (ROWS, COLUMNS * bits // 32)
    assert packed.scales.dtype == np.float32 and packed.scales.shape == (ROWS, COLUMNS // 32)
    np.testing.assert_array_equal(mlx_arrays.dequantize(packed), expected)


@pytest.mark.parametrize("kind", ["Q4_0", "Q4_1", "Q8_0"])
def test_numpy_block_values_equal_the_gguf_dequantizer(kind: str) -> None:
    blocks, expected = _gguf(kind, seed=3)
    np.testing.assert_array_equal(block_values(kind, blocks), expected)


def test_a_single_hand_made_q4_1_block() -> None:
    # d = 0.5, m = -2.0, codes 0..15 then 15..0: weight j = 0.5 * code_j - 2.
    codes = np.array(list(range(16)) + list(range(15, -1, -1)), dtype=np.uint8)
    header = np.array([0.5, -2.0], dtype=np.float16).view(np.uint8)
    block = np.concatenate([header, codes[:16] | (codes[16:] << 4)]).reshape(1, 20)
    packed = repack("Q4_1", block, 4)
    np.testing.assert_array_equal(mlx_arrays.dequantize(packed)[0], 0.5 * codes - 2.0)


def test_packing_matches_mlx_own_layout() -> None:
    values = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    for bits in (4, 8):
        reference = mlx_arrays.quantize(values, bits)
        shifts = np.arange(32 // bits, dtype=np.uint32) * bits
        codes = ((reference.weight[..., None] >> shifts) & ((1 << bits) - 1)).reshape(4, 64)
        np.testing.assert_array_equal(pack_codes(codes.astype(np.uint8), bits),
                                      reference.weight)


def test_narrowing_and_unknown_kinds_are_refused() -> None:
    blocks, _ = _gguf("Q8_0")
    with pytest.raises(ValueError, match="lose precision"):
        repack("Q8_0", blocks, 4)
    with pytest.raises(ValueError, match="Q6_K"):
        repack("Q6_K", blocks, 8)
