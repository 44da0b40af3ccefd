"""The importer's thin typed wrapper over mlx and mlx-lm: numpy arrays in and out."""

from pathlib import Path

import mlx.core as mx
import numpy as np
import numpy.typing as npt

from skulk.models.mlx_import.block_repack import GROUP_SIZE, FloatArray, PackedWeight

AnyArray = npt.NDArray[np.generic]


def quantize(weight: FloatArray, bits: int, group_size: int = GROUP_SIZE) -> PackedWeight:
    """MLX affine quantization of a float32 matrix, keeping float32 scales and biases.

    Rounds every weight, unlike `block_repack.repack`: use it only for float sources.
    """
    packed, scales, biases = mx.quantize(
        mx.array(weight.astype(np.float32)), group_size=group_size, bits=bits)
    return PackedWeight(
        weight=np.array(packed, dtype=np.uint32),
        scales=np.array(scales, dtype=np.float32),
        biases=np.array(biases, dtype=np.float32),
        bits=bits,
        group_size=group_size,
    )


def dequantize(packed: PackedWeight) -> FloatArray:
    """What MLX computes from a packed weight: float32 values in the original shape."""
    values = mx.dequantize(
        mx.array(packed.weight), mx.array(packed.scales), mx.array(packed.biases),
        group_size=packed.group_size, bits=packed.bits)
    return np.array(values, dtype=np.float32)


def load_safetensors(path: Path) -> dict[str, AnyArray]:
    """The tensors of one safetensors file; floating tensors (bf16 too) as float32."""
    loaded = mx.load(str(path))
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} is not a safetensors file")
    tensors: dict[str, AnyArray] = {}
    for name, array in loaded.items():
        if mx.issubdtype(array.dtype, mx.floating):
            array = array.astype(mx.float32)
        tensors[str(name)] = np.array(array)
    return tensors


def check_architecture(config: dict[str, object]) -> None:
    """Raise ValueError unless mlx-lm has model code for this config's `model_type`."""
    # mlx-lm resolves model_type (with its remapping table) only in this private helper.
    from mlx_lm.utils import _get_classes

    try:
        _get_classes(config)
    except (ValueError, KeyError) as error:
        raise ValueError(
            f"mlx-lm has no model code for model_type {config.get('model_type')!r}: "
            "only architectures mlx-lm supports can be imported"
        ) from error
