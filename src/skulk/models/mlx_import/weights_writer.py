"""Write converted tensors as mlx-lm safetensors: one file, or shards with an index.

Also collects how each quantized module was stored, which becomes config.json's
`quantization` block (a default plus per-module overrides, the form mlx-lm reads).
"""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skulk.models.mlx_import.block_repack import PackedWeight
from skulk.models.mlx_import.hf_config import JsonDict
from skulk.models.mlx_import.mlx_arrays import AnyArray
from skulk.models.mlx_import.safetensors_file import write_safetensors

# Keeps each file comfortably below what one mmap or one upload should handle.
DEFAULT_SHARD_BYTES = 4 * 1024**3


@dataclass(frozen=True)
class WrittenWeights:
    """What the writer produced."""

    files: list[str]
    weight_bytes: int  # sum of tensor sizes, headers excluded
    tensor_count: int


class WeightsWriter:
    """Accumulates tensors and flushes a shard whenever it reaches `shard_bytes`."""

    def __init__(self, directory: Path, shard_bytes: int = DEFAULT_SHARD_BYTES) -> None:
        self._directory = directory
        self._shard_bytes = shard_bytes
        self._pending: dict[str, AnyArray] = {}
        self._pending_bytes = 0
        self._shards: list[tuple[str, list[str]]] = []
        self._total_bytes = 0
        self._count = 0
        self._quantized: dict[str, tuple[int, int]] = {}

    def add(self, name: str, array: AnyArray) -> None:
        """Queue one tensor under its final (mlx-lm) name."""
        if name in self._pending or any(name in names for _, names in self._shards):
            raise ValueError(f"tensor {name} written twice")
        self._pending[name] = np.ascontiguousarray(array)
        self._pending_bytes += array.nbytes
        self._total_bytes += array.nbytes
        self._count += 1
        if self._pending_bytes >= self._shard_bytes:
            self._flush()

    def add_quantized(self, module: str, packed: PackedWeight) -> None:
        """Queue `module.weight/.scales/.biases` and remember its bits and group size."""
        self.add(f"{module}.weight", packed.weight)
        self.add(f"{module}.scales", packed.scales)
        self.add(f"{module}.biases", packed.biases)
        self._quantized[module] = (packed.group_size, packed.bits)

    def quantization(self, default_bits: int | None) -> JsonDict | None:
        """config.json's `quantization`: the default, plus modules stored otherwise."""
        if default_bits is None and not self._quantized:
            return None
        group_sizes = {group for group, _ in self._quantized.values()}
        default_group = min(group_sizes) if group_sizes else 32
        bits = default_bits if default_bits is not None else 4
        block: JsonDict = {"group_size": default_group, "bits": bits}
        for module, (group, module_bits) in sorted(self._quantized.items()):
            if (group, module_bits) != (default_group, bits):
                block[module] = {"group_size": group, "bits": module_bits}
        return block

    def _flush(self) -> None:
        if not self._pending:
            return
        temporary = f"shard-{len(self._shards):05d}.safetensors"
        # mlx-lm tags its own files this way.
        write_safetensors(self._directory / temporary, self._pending, {"format": "mlx"})
        self._shards.append((temporary, list(self._pending)))
        self._pending = {}
        self._pending_bytes = 0

    def close(self) -> WrittenWeights:
        """Write what is left and give the shards their final names."""
        self._flush()
        if not self._shards:
            raise ValueError("no tensors were converted")
        if len(self._shards) == 1:
            (self._directory / self._shards[0][0]).rename(
                self._directory / "model.safetensors")
            return WrittenWeights(["model.safetensors"], self._total_bytes, self._count)
        total = len(self._shards)
        weight_map: dict[str, str] = {}
        files = []
        for index, (temporary, names) in enumerate(self._shards, start=1):
            final = f"model-{index:05d}-of-{total:05d}.safetensors"
            (self._directory / temporary).rename(self._directory / final)
            files.append(final)
            weight_map.update(dict.fromkeys(names, final))
        index_document = {"metadata": {"total_size": self._total_bytes},
                          "weight_map": dict(sorted(weight_map.items()))}
        (self._directory / "model.safetensors.index.json").write_text(
            json.dumps(index_document, indent=2) + "\n")
        return WrittenWeights(files, self._total_bytes, self._count)
