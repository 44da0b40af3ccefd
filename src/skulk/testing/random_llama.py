"""Tiny random-weight Llama checkpoints, for loader and sharding tests that need no real
model and no tokenizer (`tiny_model` writes one with a tokenizer).

They are written like a converted model (config.json + model.safetensors), so loaders are
exercised exactly as on a real one.
"""

import json
from pathlib import Path
from typing import Any

import mlx.core as mx

from skulk.worker.engines.mlx.families.llama.mlx_llama import random_llama_weights

QUANTIZATION_GROUP_SIZE = 32


def tiny_llama_config(
    *, n_layers: int = 6, hidden_size: int = 64, heads: int = 4, kv_heads: int = 2,
    intermediate_size: int = 128, vocab_size: int = 256, tied: bool = True,
) -> dict[str, Any]:
    """A config.json for a small Llama of the given shape."""
    return {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": n_layers, "hidden_size": hidden_size,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "intermediate_size": intermediate_size, "vocab_size": vocab_size,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 2048,
        "tie_word_embeddings": tied, "torch_dtype": "float32",
    }


def write_random_llama(
    directory: Path, config: dict[str, Any], *, seed: int = 0, quantize_bits: int | None = None
) -> Path:
    """Write a random-weight model of `config` into `directory` (created) and return it."""
    directory.mkdir(parents=True, exist_ok=True)
    config = dict(config)
    if quantize_bits is not None:
        config["quantization"] = {"group_size": QUANTIZATION_GROUP_SIZE, "bits": quantize_bits}
    weights = random_llama_weights(config, seed, quantize_bits, QUANTIZATION_GROUP_SIZE)
    mx.save_safetensors(str(directory / "model.safetensors"), weights,
                        metadata={"format": "mlx"})
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory
