"""Tiny random-weight checkpoints of every model family the sharded MLX engines split,
built from mlx-lm's own ModelArgs and model classes: a few layers, small widths, and the
shape quirks of each family switched on (Gemma 3's sliding layers, untied heads, qk-norms)
by the fields its module declares (`ModelFamily.tiny_config`, `skulk/model_families/`).

They are written like a converted model (config.json + model.safetensors), so loaders are
exercised exactly as on a real one; pass `vocab_size` to fit a tokenizer.
"""

import json
from pathlib import Path
from typing import Any

import mlx.core as mx
from mlx.utils import tree_flatten

from skulk.model_families.registry import find_family, known_model_types
from skulk.worker.engines.mlx import mlx_api

QUANTIZATION_GROUP_SIZE = 32

_COMMON: dict[str, Any] = {
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "max_position_embeddings": 2048, "torch_dtype": "float32",
}

FAMILIES = tuple(sorted(known_model_types()))
"""The `model_type`s there is a tiny config of: every registered family."""


def tiny_config(model_type: str, *, n_layers: int = 4, vocab_size: int = 256,
                **overrides: Any) -> dict[str, Any]:
    """A config.json for a small model of `model_type`."""
    family = find_family(model_type)
    if family is None:
        raise ValueError(f"no model family declares {model_type!r} (skulk/model_families/)")
    return {"model_type": model_type, "num_hidden_layers": n_layers,
            "vocab_size": vocab_size, **_COMMON, **family.tiny_config, **overrides}


def random_weights(config: dict[str, Any], seed: int, quantize_bits: int | None = None,
                   group_size: int = QUANTIZATION_GROUP_SIZE) -> dict[str, mx.array]:
    """Checkpoint tensors (mlx-lm names) of a random-weight model of `config`."""
    mx.random.seed(seed)
    model = mlx_api.new_model(config)
    if quantize_bits is not None:
        mlx_api.quantize(model, group_size=group_size, bits=quantize_bits)
    weights: dict[str, mx.array] = dict(tree_flatten(model.parameters()))
    mx.eval(weights)
    return weights


def write_random_model(directory: Path, config: dict[str, Any], *, seed: int = 0,
                       quantize_bits: int | None = None, scale: float = 1.0) -> Path:
    """Write a random-weight model of `config` into `directory` (created) and return it.

    `scale` multiplies the projections: at mlx's default initialisation the random layers
    barely move the residual stream and greedy output repeats one token.
    """
    directory.mkdir(parents=True, exist_ok=True)
    config = dict(config)
    if quantize_bits is not None:
        config["quantization"] = {"group_size": QUANTIZATION_GROUP_SIZE, "bits": quantize_bits}
    weights = random_weights(config, seed, quantize_bits)
    if scale != 1.0:
        weights = {name: value * scale if "proj" in name and value.dtype == mx.float32
                   else value for name, value in weights.items()}
    mx.save_safetensors(str(directory / "model.safetensors"), weights,
                        metadata={"format": "mlx"})
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory
