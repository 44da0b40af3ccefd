"""A typed, read-only view of a GGUF file: metadata, tensor layout, dequantization.

The header is parsed here rather than with `gguf.GGUFReader`, which builds a numpy view
per array element and spends ~5 s of CPU on SmolLM2's 49k-token vocabulary (this parser:
~0.1 s). The `gguf` package still supplies the block sizes and the dequantizers, so
its `Any` stays in this module. Tensor data is memory-mapped; nothing is read until used.
"""

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize as _gguf_dequantize

from skulk.models.mlx_import.block_repack import block_values, repackable_bits

FloatArray = npt.NDArray[np.float32]
ByteArray = npt.NDArray[np.uint8]
Value = int | float | bool | str | list["Value"]

_MAGIC = b"GGUF"
_DEFAULT_ALIGNMENT = 32
# GGUF value type → (struct format, numpy dtype) of the scalars that have a fixed width.
_SCALARS: dict[int, tuple[str, str]] = {
    0: ("<B", "<u1"), 1: ("<b", "<i1"), 2: ("<H", "<u2"), 3: ("<h", "<i2"),
    4: ("<I", "<u4"), 5: ("<i", "<i4"), 6: ("<f", "<f4"), 10: ("<Q", "<u8"),
    11: ("<q", "<i8"), 12: ("<d", "<f8"),
}
_BOOL, _STRING, _ARRAY = 7, 8, 9


@dataclass(frozen=True)
class GgufTensor:
    """One tensor as stored: `kind` is the ggml type name (`F32`, `Q4_1`, `Q8_0`, ...)."""

    name: str
    kind: str
    shape: tuple[int, ...]  # row-major, outermost first: (out_features, in_features)
    raw: ByteArray  # (rows, bytes per row): values, or packed blocks, row by row

    @property
    def is_block_quantized(self) -> bool:
        return self.kind not in ("F32", "F16", "BF16")

    def blocks(self) -> ByteArray:
        """The packed blocks, one row per output row (block-quantized kinds only)."""
        if not self.is_block_quantized:
            raise ValueError(f"{self.name} is {self.kind}, not block-quantized")
        return self.raw


def _bf16(raw: ByteArray) -> FloatArray:
    widened = np.ascontiguousarray(raw).view("<u2").astype(np.uint32) << 16
    return widened.view(np.float32)


_FLOAT_DECODERS: dict[str, Callable[[ByteArray], FloatArray]] = {
    "F32": lambda raw: np.ascontiguousarray(raw).view("<f4").astype(np.float32),
    "F16": lambda raw: np.ascontiguousarray(raw).view("<f2").astype(np.float32),
    "BF16": _bf16,
}


def dequantize(tensor: GgufTensor) -> FloatArray:
    """The tensor's values as float32 in its logical shape, whatever its storage kind."""
    decoder = _FLOAT_DECODERS.get(tensor.kind)
    if decoder is not None:
        values = decoder(tensor.raw)
    elif repackable_bits(tensor.kind) is not None:
        # Whole-tensor numpy, several times faster than gguf's chunked dequantizers.
        values = block_values(tensor.kind, tensor.raw)
    else:
        qtype = GGMLQuantizationType[tensor.kind]
        values = np.asarray(_gguf_dequantize(tensor.raw, qtype), dtype=np.float32)
    return values.reshape(tensor.shape)


class _Cursor:
    """Reads little-endian GGUF values from a buffer, front to back."""

    def __init__(self, buffer: memoryview) -> None:
        self.buffer = buffer
        self.offset = 0

    def scalar(self, fmt: str) -> int | float:
        (value,) = struct.unpack_from(fmt, self.buffer, self.offset)
        self.offset += struct.calcsize(fmt)
        result: int | float = value
        return result

    def integer(self, fmt: str) -> int:
        return int(self.scalar(fmt))

    def string(self) -> str:
        length = self.integer("<Q")
        start, self.offset = self.offset, self.offset + length
        if self.offset > len(self.buffer):
            raise ValueError("string runs past the end of the file")
        return bytes(self.buffer[start : self.offset]).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Value:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind][0])
        if kind == _BOOL:
            return bool(self.integer("<B"))
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            return self.array()
        raise ValueError(f"unknown GGUF value type {kind}")

    def array(self) -> list[Value]:
        kind, count = self.integer("<I"), self.integer("<Q")
        if kind in _SCALARS:  # one numpy read instead of `count` struct calls
            dtype = np.dtype(_SCALARS[kind][1])
            values = np.frombuffer(self.buffer, dtype, count, self.offset)
            self.offset += count * dtype.itemsize
            items: list[Value] = values.tolist()
            return items
        return [self.value(kind) for _ in range(count)]


class GgufFile:
    """Typed metadata and tensors of one GGUF file (memory-mapped, read-only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data = np.memmap(path, dtype=np.uint8, mode="r")
        try:
            self._metadata, self._tensors = self._parse()
        except (ValueError, KeyError, IndexError, struct.error) as error:
            raise ValueError(f"{path} is not a readable GGUF file: {error}") from error

    def _parse(self) -> tuple[dict[str, Value], list[GgufTensor]]:
        cursor = _Cursor(self._data.data)  # a view: the weights are not copied
        if bytes(cursor.buffer[:4]) != _MAGIC:
            raise ValueError("GGUF magic missing")
        cursor.offset = 4
        version = cursor.integer("<I")
        if version not in (2, 3):
            raise ValueError(f"GGUF version {version} is not supported (2 or 3)")
        tensor_count, kv_count = cursor.integer("<Q"), cursor.integer("<Q")
        metadata: dict[str, Value] = {}
        for _ in range(kv_count):
            key = cursor.string()
            metadata[key] = cursor.value(cursor.integer("<I"))
        infos = [self._tensor_info(cursor) for _ in range(tensor_count)]
        alignment = metadata.get("general.alignment", _DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or alignment <= 0:
            raise ValueError(f"bad general.alignment {alignment!r}")
        data_start = -(-cursor.offset // alignment) * alignment
        return metadata, [self._tensor(data_start, *info) for info in infos]

    @staticmethod
    def _tensor_info(cursor: _Cursor) -> tuple[str, tuple[int, ...], int, int]:
        name = cursor.string()
        dims = [cursor.integer("<Q") for _ in range(cursor.integer("<I"))]
        kind, offset = cursor.integer("<I"), cursor.integer("<Q")
        # GGUF lists dimensions innermost first.
        return name, tuple(reversed(dims)), kind, offset

    def _tensor(self, data_start: int, name: str, shape: tuple[int, ...], kind: int,
                offset: int) -> GgufTensor:
        qtype = GGMLQuantizationType(kind)
        block_size, block_bytes = GGML_QUANT_SIZES[qtype]
        row_bytes = shape[-1] // block_size * block_bytes
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        start = data_start + offset
        if start + rows * row_bytes > self._data.size:
            raise ValueError(f"tensor {name} runs past the end of the file")
        raw = self._data[start : start + rows * row_bytes].reshape(rows, row_bytes)
        return GgufTensor(name=name, kind=qtype.name, shape=shape, raw=raw)

    def has(self, key: str) -> bool:
        return key in self._metadata

    def _get(self, key: str) -> Value:
        if key not in self._metadata:
            raise ValueError(f"{self.path.name} has no metadata key {key!r}")
        return self._metadata[key]

    def string(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise ValueError(f"GGUF key {key!r} is {type(value).__name__}, not a string")
        return value

    def integer(self, key: str) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"GGUF key {key!r} is {type(value).__name__}, not an integer")
        return value

    def number(self, key: str) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"GGUF key {key!r} is {type(value).__name__}, not a number")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        if key not in self._metadata:
            return default
        value = self._get(key)
        if not isinstance(value, bool):
            raise ValueError(f"GGUF key {key!r} is {type(value).__name__}, not a bool")
        return value

    def strings(self, key: str) -> list[str]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"GGUF key {key!r} is not an array of strings")
        return [str(item) for item in value]

    def integers(self, key: str) -> list[int]:
        value = self._get(key)
        if not isinstance(value, list) or not all(
                isinstance(item, int) and not isinstance(item, bool) for item in value):
            raise ValueError(f"GGUF key {key!r} is not an array of integers")
        return [int(item) for item in value if isinstance(item, int)]

    def tensors(self) -> list[GgufTensor]:
        """Every tensor in file order, with its logical (outermost-first) shape."""
        return list(self._tensors)
