"""Tiny random-weight Llama checkpoints, for loader and sharding tests that need no real
model and no tokenizer (`tiny_model` writes one with a tokenizer).

They are written like a converted model (config.json + model.safetensors), so loaders are
exercised exactly as on a real one.
"""

from pathlib import Path
from typing import Any

from skulk.testing.random_family import QUANTIZATION_GROUP_SIZE, write_random_model

__all__ = ["QUANTIZATION_GROUP_SIZE", "tiny_llama_config", "write_random_llama"]


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
    return write_random_model(directory, config, seed=seed, quantize_bits=quantize_bits)
