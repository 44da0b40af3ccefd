"""Lossless repacking of GGUF block-quantized tensors into MLX affine quantization.

Q4_0, Q4_1 and Q8_0 blocks hold 32 weights as `scale * code + bias` with one scale and
bias per block, which is exactly MLX's affine mode with group size 32. Repacking keeps
every weight bit-identical; re-quantizing the dequantized values instead loses
accuracy (see ENGINE-NOTES: 4-bit output collapses). Scales and biases are float32
because float16 scales make MLX's CPU matmuls far slower.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

GROUP_SIZE = 32

FloatArray = npt.NDArray[np.float32]
CodeArray = npt.NDArray[np.uint8]
PackedArray = npt.NDArray[np.uint32]


@dataclass(frozen=True)
class AffineBlocks:
    """Weights as `scales * codes + biases`, one scale and bias per 32 columns."""

    codes: CodeArray  # (rows, columns), each value < 2**bits
    scales: FloatArray  # (rows, columns / 32)
    biases: FloatArray
    bits: int


@dataclass(frozen=True)
class PackedWeight:
    """An MLX affine-quantized weight: what `mx.quantize` returns, as numpy arrays."""

    weight: PackedArray
    scales: FloatArray
    biases: FloatArray
    bits: int
    group_size: int = GROUP_SIZE


def _half(blocks: CodeArray, start: int) -> FloatArray:
    value = np.ascontiguousarray(blocks[:, start : start + 2]).view(np.float16)
    return value.astype(np.float32).reshape(-1)


def _nibbles(packed: CodeArray) -> CodeArray:
    # Byte j of a 4-bit block holds weight j in its low nibble and weight j + 16 in its
    # high nibble.
    return np.concatenate([packed & 0x0F, packed >> 4], axis=-1)


def _q4_0(blocks: CodeArray) -> tuple[CodeArray, FloatArray, FloatArray, int]:
    scale = _half(blocks, 0)
    return _nibbles(blocks[:, 2:18]), scale, scale * np.float32(-8), 4


def _q4_1(blocks: CodeArray) -> tuple[CodeArray, FloatArray, FloatArray, int]:
    return _nibbles(blocks[:, 4:20]), _half(blocks, 0), _half(blocks, 2), 4


def _q8_0(blocks: CodeArray) -> tuple[CodeArray, FloatArray, FloatArray, int]:
    # Signed codes shifted into 0..255; the bias takes the shift back out exactly.
    codes = (blocks[:, 2:34].view(np.int8).astype(np.int16) + 128).astype(np.uint8)
    scale = _half(blocks, 0)
    return codes, scale, scale * np.float32(-128), 8


_BlockDecoder = Callable[[CodeArray], tuple[CodeArray, FloatArray, FloatArray, int]]

# Bytes per 32-weight block, and how to read it.
_DECODERS: dict[str, tuple[int, _BlockDecoder]] = {
    "Q4_0": (18, _q4_0),
    "Q4_1": (20, _q4_1),
    "Q8_0": (34, _q8_0),
}


def repackable_bits(kind: str) -> int | None:
    """The bit width a GGUF block kind repacks to losslessly, or None if it cannot."""
    return {"Q4_0": 4, "Q4_1": 4, "Q8_0": 8}.get(kind)


def decode_blocks(kind: str, rows: CodeArray) -> AffineBlocks:
    """Split `rows` (one row of packed blocks per output row) into codes, scales, biases."""
    if kind not in _DECODERS:
        raise ValueError(f"{kind} blocks cannot be repacked losslessly")
    block_bytes, decoder = _DECODERS[kind]
    n_rows = rows.shape[0]
    if rows.shape[1] % block_bytes:
        raise ValueError(f"a {kind} row of {rows.shape[1]} bytes is not whole blocks")
    codes, scales, biases, bits = decoder(rows.reshape(-1, block_bytes))
    return AffineBlocks(
        codes=codes.reshape(n_rows, -1),
        scales=scales.reshape(n_rows, -1),
        biases=biases.reshape(n_rows, -1),
        bits=bits,
    )


def block_values(kind: str, rows: CodeArray) -> FloatArray:
    """The float32 values of Q4_0/Q4_1/Q8_0 rows, bit-identical to llama.cpp's
    dequantization (every product and sum here is exact or rounds the same way)."""
    blocks = decode_blocks(kind, rows)
    n_rows, columns = blocks.codes.shape
    values = blocks.codes.reshape(n_rows, -1, GROUP_SIZE).astype(np.float32)
    values *= blocks.scales[..., None]  # in place: no second 4-bytes-per-weight temporary
    values += blocks.biases[..., None]
    return values.reshape(n_rows, columns)


def pack_codes(codes: CodeArray, bits: int) -> PackedArray:
    """MLX's layout: code i of a row sits at bit `bits * (i % per_word)` of word
    `i // per_word`, little end first."""
    if bits not in (4, 8):
        raise ValueError(f"only 4- and 8-bit packing is supported, not {bits}")
    if int(codes.max(initial=0)) >= 1 << bits:
        raise ValueError(f"codes do not fit in {bits} bits")
    per_word = 32 // bits
    rows, columns = codes.shape
    grouped = codes.reshape(rows, columns // per_word, per_word).astype(np.uint32)
    shifts = (np.arange(per_word, dtype=np.uint32) * np.uint32(bits)).reshape(1, 1, -1)
    packed: PackedArray = np.bitwise_or.reduce(grouped << shifts, axis=-1)
    return packed


def repack(kind: str, rows: CodeArray, bits: int) -> PackedWeight:
    """Repack GGUF blocks into an MLX `bits`-bit weight without changing any value.

    `bits` may be wider than the blocks' own width (4-bit codes stored in 8 bits are
    still exact) but not narrower.
    """
    blocks = decode_blocks(kind, rows)
    if bits < blocks.bits:
        raise ValueError(f"{kind} needs {blocks.bits} bits; {bits} would lose precision")
    return PackedWeight(
        weight=pack_codes(blocks.codes, bits), scales=blocks.scales, biases=blocks.biases,
        bits=bits,
    )
