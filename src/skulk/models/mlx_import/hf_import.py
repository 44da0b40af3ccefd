"""Hugging Face style directory (config.json + *.safetensors + tokenizer) → MLX directory.

Weights become float32, or `q_bits` affine with float32 scales (quantized from the
float weights, which rounds). Directories that mlx-lm already quantized are copied with
their scales widened to float32, which MLX multiplies much faster on the CPU.
"""

import json
import shutil
from pathlib import Path

import numpy as np

from skulk.models.mlx_import.block_repack import GROUP_SIZE
from skulk.models.mlx_import.mlx_arrays import (
    AnyArray,
    check_architecture,
    load_safetensors,
    quantize,
)
from skulk.models.mlx_import.weights_writer import WeightsWriter, WrittenWeights

# Everything besides the weights that mlx-lm or transformers read from a model directory.
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
    "generation_config.json", "tokenizer.model", "vocab.json", "merges.txt",
    "added_tokens.json", "chat_template.jinja", "chat_template.json",
)


def is_hf_directory(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def should_quantize(name: str, array: AnyArray) -> bool:
    """Matrices of linear and embedding layers; norms, biases and odd widths stay float."""
    return (
        array.ndim == 2 and name.endswith(".weight")
        and "norm" not in name and array.shape[1] % GROUP_SIZE == 0
        and array.dtype.kind == "f"
    )


def _read_config(source: Path, q_bits: int | None) -> dict[str, object]:
    config: dict[str, object] = json.loads((source / "config.json").read_text())
    check_architecture(config)
    # mlx-lm writes its own quantization under both keys (mlx-community repos); any other
    # "quantization_config" (GPTQ, AWQ, fp8, ...) is a format MLX cannot run.
    if "quantization_config" in config and config["quantization_config"] != config.get(
            "quantization"):
        raise ValueError(f"{source} holds {config['quantization_config']!r}-quantized "
                         "weights; import a float checkpoint instead")
    if "quantization" in config and q_bits is not None:
        raise ValueError(f"{source} is already quantized; import it without --q-bits")
    return config


def import_hf_directory(source: Path, out_dir: Path, q_bits: int | None) -> WrittenWeights:
    """Convert a Hugging Face style model directory into an MLX directory at `out_dir`."""
    config = _read_config(source, q_bits)
    weight_files = sorted(source.glob("*.safetensors"))
    if not weight_files:
        raise FileNotFoundError(f"{source} has no *.safetensors weights")
    tokenizer_files = [source / name for name in TOKENIZER_FILES if (source / name).is_file()]
    if not any(path.name in ("tokenizer.json", "tokenizer.model") for path in tokenizer_files):
        raise FileNotFoundError(f"{source} has no tokenizer.json or tokenizer.model")
    already_quantized = "quantization" in config
    tied = config.get("tie_word_embeddings") is True
    writer = WeightsWriter(out_dir)
    for weight_file in weight_files:
        for name, array in load_safetensors(weight_file).items():
            # mlx-lm drops these on load anyway: tied heads and precomputed RoPE tables.
            if (tied and name == "lm_head.weight") or "rotary_emb.inv_freq" in name:
                continue
            if q_bits is not None and not already_quantized and should_quantize(name, array):
                writer.add_quantized(name.removesuffix(".weight"),
                                     quantize(array.astype(np.float32), q_bits))
            else:
                writer.add(name, array)
    written = writer.close()
    if not already_quantized:
        quantization = writer.quantization(q_bits)
        if quantization is not None:
            config["quantization"] = quantization
        config["torch_dtype"] = "float32"
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for path in tokenizer_files:
        shutil.copyfile(path, out_dir / path.name)
    return written
