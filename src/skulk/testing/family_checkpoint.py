"""Hugging Face style checkpoints of every family the sharded MLX engines split: a tiny
random-weight model (testing/random_family.py) in bfloat16, as models are published,
with a real tokenizer and chat template (testing/tiny_model.py's), ready to import."""

import json
import shutil
from pathlib import Path

import mlx.core as mx

from skulk.testing.random_family import tiny_config, write_random_model
from skulk.testing.tiny_model import write_tiny_model

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                    "chat_template.jinja")


def write_family_checkpoint(directory: Path, model_type: str, *, n_layers: int = 4,
                            seed: int = 0, mlx_quantized_bits: int | None = None) -> Path:
    """Write the checkpoint into `directory` (created) and return it.

    `mlx_quantized_bits` writes it as mlx-lm publishes a quantized model (mlx-community):
    affine-quantized, its settings under both `quantization` and `quantization_config`.
    """
    tokenizer_dir = write_tiny_model(directory.parent / f".{directory.name}-tokenizer",
                                     layers=1)
    tokenizer_config = json.loads((tokenizer_dir / "config.json").read_text())
    config = tiny_config(model_type, n_layers=n_layers,
                         vocab_size=tokenizer_config["vocab_size"],
                         eos_token_id=tokenizer_config["eos_token_id"],
                         torch_dtype="bfloat16")
    write_random_model(directory, config, seed=seed, quantize_bits=mlx_quantized_bits,
                       scale=4.0)
    weights_file = directory / "model.safetensors"
    loaded = mx.load(str(weights_file))
    assert isinstance(loaded, dict)
    mx.save_safetensors(str(weights_file), {
        name: value.astype(mx.bfloat16) if value.dtype == mx.float32 else value
        for name, value in loaded.items()}, metadata={"format": "mlx"})
    if mlx_quantized_bits is not None:
        written = json.loads((directory / "config.json").read_text())
        written["quantization_config"] = written["quantization"]
        (directory / "config.json").write_text(json.dumps(written, indent=2))
    for name in _TOKENIZER_FILES:
        if (tokenizer_dir / name).is_file():
            shutil.copyfile(tokenizer_dir / name, directory / name)
    shutil.rmtree(tokenizer_dir)
    return directory
