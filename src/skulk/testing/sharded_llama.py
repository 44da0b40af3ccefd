"""Tiny Llama checkpoints cut into several safetensors files with
`model.safetensors.index.json`, the way large models are published: for tests of
fetching and loading a pipeline stage's files only."""

import json
from pathlib import Path
from typing import Any

import mlx.core as mx

from skulk.models.store.layer_files import INDEX_FILE, layer_of
from skulk.testing.random_llama import tiny_llama_config, write_random_llama


def shard_name(index: int, count: int) -> str:
    return f"model-{index + 1:05d}-of-{count:05d}.safetensors"


def shard_checkpoint(directory: Path, shards: int) -> Path:
    """Cut `directory`'s model.safetensors into `shards` files and an index, in place.
    Layers are split evenly over the files in order; the embeddings go in the first, the
    final norm (and lm_head) in the last, as checkpoints are usually cut."""
    whole = directory / "model.safetensors"
    loaded = mx.load(str(whole))
    assert isinstance(loaded, dict)
    n_layers = 1 + max(layer for name in loaded if (layer := layer_of(name)) is not None)
    per_file = -(-n_layers // shards)
    parts: list[dict[str, mx.array]] = [{} for _ in range(shards)]
    weight_map = {}
    for tensor, array in sorted(loaded.items()):
        layer = layer_of(tensor)
        part = (0 if "embed" in tensor else shards - 1) if layer is None \
            else min(layer // per_file, shards - 1)
        parts[part][tensor] = array
        weight_map[tensor] = shard_name(part, shards)
    for part, tensors in enumerate(parts):
        mx.save_safetensors(str(directory / shard_name(part, shards)), tensors,
                            metadata={"format": "mlx"})
    (directory / INDEX_FILE).write_text(json.dumps(
        {"metadata": {"total_size": sum(a.nbytes for a in loaded.values())},
         "weight_map": weight_map}, indent=1))
    whole.unlink()
    return directory


def write_sharded_llama(directory: Path, *, n_layers: int = 6, shards: int = 3,
                        config: dict[str, Any] | None = None) -> Path:
    """A random-weight Llama of `n_layers` (no tokenizer) in `shards` files, written into
    `directory` (created)."""
    write_random_llama(directory, config or tiny_llama_config(n_layers=n_layers))
    return shard_checkpoint(directory, shards)
