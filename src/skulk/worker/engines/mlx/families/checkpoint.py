"""Reading a stage's tensors out of an MLX checkpoint, quantizing like it and loading them.

`mx.load` maps safetensors lazily, so the tensors a stage drops are never read; a stage
pulled on its own (only the files holding its layers) loads the same way.
"""

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlx.core as mx

from skulk.worker.engines.mlx import mlx_api

nn: Any = importlib.import_module("mlx.nn")

# Keys of config.json's "quantization" that are settings, not per-module overrides.
_QUANTIZATION_SETTINGS = frozenset({"group_size", "bits", "mode"})


def read_weights(model_dir: Path) -> dict[str, mx.array]:
    """Every tensor of the checkpoint files present, unread until evaluated."""
    files = sorted(model_dir.glob("model*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no model*.safetensors in {model_dir}")
    weights: dict[str, mx.array] = {}
    for file in files:
        loaded = mx.load(str(file))
        if not isinstance(loaded, dict):
            raise ValueError(f"{file} does not hold named tensors")
        weights.update(loaded)
    return weights


def quantize_like_checkpoint(
    module: Any,
    config: dict[str, Any],
    weights: dict[str, mx.array],
    rename: Callable[[str], str | None],
) -> None:
    """Turn the layers stored quantized into quantized layers, as mlx-lm's loader does.

    Per-module overrides in config.json's "quantization" are keyed by checkpoint paths,
    so they are renamed like the tensors; other modules are quantized when their
    `.scales` are present, with settings read off the stored shapes.
    """
    quantization = config.get("quantization")
    if quantization is None:
        if config.get("quantization_config"):
            raise ValueError("only MLX-native quantization (config 'quantization') can be "
                             "loaded by the sharded engines; convert the model first")
        return
    overrides: dict[str, Any] = {}
    for path, setting in quantization.items():
        if path not in _QUANTIZATION_SETTINGS and (local := rename(path)) is not None:
            overrides[local] = setting

    def predicate(path: str, leaf: Any) -> bool | dict[str, Any]:
        if path in overrides:
            override: bool | dict[str, Any] = overrides[path]
            return override
        if not hasattr(leaf, "to_quantized") or f"{path}.scales" not in weights:
            return False
        return mlx_api.checkpoint_quantization(path, leaf, weights)

    nn.quantize(module, group_size=quantization["group_size"], bits=quantization["bits"],
                mode=quantization.get("mode", "affine"), class_predicate=predicate)


def load_into(module: Any, weights: dict[str, mx.array]) -> None:
    """Load every parameter of `module` (strictly: nothing missing, nothing extra)."""
    module.eval()
    module.load_weights(list(weights.items()), strict=True)
    mx.eval(module.parameters())
