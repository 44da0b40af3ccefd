"""The Llama model code of the sharded engines: stages, quantization and loading.

A pipeline stage reuses mlx-lm's `TransformerBlock` and mask exactly (through `mlx_api`),
so a split model computes what the whole one does. mlx.nn carries no types the checker
can read, so its modules are reached through `Any` here.
"""

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlx.core as mx
from mlx.utils import tree_flatten

from skulk.worker.engines.mlx import mlx_api

nn: Any = importlib.import_module("mlx.nn")

# Keys of config.json's "quantization" that are settings, not per-module overrides.
_QUANTIZATION_SETTINGS = frozenset({"group_size", "bits", "mode"})


def model_args(config: dict[str, Any], n_layers: int) -> mlx_api.LlamaArgs:
    """mlx-lm's ModelArgs for `n_layers` layers; refuses the sliding-window variant."""
    args = mlx_api.llama_args(config, n_layers)
    if any(kind != "full_attention" for kind in args.layer_types or []):
        raise ValueError("Llama models with sliding-window layers cannot be split yet")
    return args


class LlamaStage:
    """A contiguous run of a Llama model's layers, with the embedding and head it needs.

    The parameters live in `module` (an mlx Module named like the checkpoint's local
    names: `layers.N`, `embed_tokens`, `norm`, `lm_head`), which is what gets quantized
    and loaded.
    """

    def __init__(
        self, config: dict[str, Any], n_layers: int, *, embeds: bool, heads: bool, tied: bool
    ) -> None:
        args = model_args(config, n_layers)
        module: Any = nn.Module()
        module.layers = [mlx_api.llama_block(args) for _ in range(n_layers)]
        if embeds or (heads and tied):
            module.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        if heads:
            module.norm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
            if not tied:
                module.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)
        self.module = module
        self.embeds = embeds
        self.heads = heads
        self.tied = tied

    @property
    def n_layers(self) -> int:
        return len(self.module.layers)

    @property
    def activation_dtype(self) -> mx.Dtype:
        """The dtype hidden states have between layers (that of the norm weights)."""
        dtype: mx.Dtype = self.module.layers[0].input_layernorm.weight.dtype
        return dtype

    def embed(self, tokens: mx.array) -> mx.array:
        if not self.embeds:
            raise RuntimeError("only the first stage embeds tokens")
        hidden: mx.array = self.module.embed_tokens(tokens)
        return hidden

    def run_layers(self, hidden: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array:
        """Hidden states through this stage's layers, appending their KV to `cache`."""
        # The mask comes from the first local cache, as in mlx-lm's LlamaModel.
        mask = mlx_api.attention_mask(hidden, cache[0])
        for layer, layer_cache in zip(self.module.layers, cache, strict=True):
            hidden = layer(hidden, mask, cache=layer_cache)
        return hidden

    def head(self, hidden: mx.array) -> mx.array:
        """Logits from the last layer's hidden states: final norm, then the output head."""
        if not self.heads:
            raise RuntimeError("only the last stage applies the head")
        normed = self.module.norm(hidden)
        logits: mx.array = (self.module.embed_tokens.as_linear(normed) if self.tied
                            else self.module.lm_head(normed))
        return logits


def read_weights(model_dir: Path, rename: Callable[[str], str | None]) -> dict[str, mx.array]:
    """The checkpoint tensors `rename` keeps, under their new names.

    `mx.load` maps safetensors lazily, so tensors that are dropped here are never read.
    """
    files = sorted(model_dir.glob("model*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no model*.safetensors in {model_dir}")
    selected: dict[str, mx.array] = {}
    for file in files:
        loaded = mx.load(str(file))
        if not isinstance(loaded, dict):
            raise ValueError(f"{file} does not hold named tensors")
        for name, array in loaded.items():
            local = rename(name)
            if local is not None:
                selected[local] = array
    return selected


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


class TensorParallelLlama:
    """A whole mlx-lm Llama model whose heads and MLP are split over a ring."""

    def __init__(self, module: mlx_api.LlamaModel) -> None:
        self._module = module

    @property
    def n_layers(self) -> int:
        return len(self._module.layers)

    def hidden(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array:
        """Final-normed hidden states (lazy); their graph holds every all-reduce."""
        hidden: mx.array = self._module.model(tokens, cache)
        return hidden

    def logits(self, hidden: mx.array) -> mx.array:
        """Output head on hidden states; the head is not split, so no collective runs."""
        if self._module.args.tie_word_embeddings:
            tied: mx.array = self._module.model.embed_tokens.as_linear(hidden)
            return tied
        logits: mx.array = self._module.lm_head(hidden)
        return logits


def load_tensor_parallel(model_dir: Path, native_group: mx.distributed.Group
                         ) -> TensorParallelLlama:
    """Load lazily, split over the group, then read only this rank's slices' sources."""
    module = mlx_api.load_llama_lazily(model_dir)
    module.shard(native_group)
    mx.eval(module.parameters())
    return TensorParallelLlama(module)


def random_llama_weights(
    config: dict[str, Any], seed: int, quantize_bits: int | None = None, group_size: int = 32
) -> dict[str, mx.array]:
    """Checkpoint tensors (Hugging Face names) of a random-weight mlx-lm Llama."""
    mx.random.seed(seed)
    module = mlx_api.random_llama_model(model_args(config, int(config["num_hidden_layers"])))
    if quantize_bits is not None:
        nn.quantize(module, group_size=group_size, bits=quantize_bits)
    weights: dict[str, mx.array] = dict(tree_flatten(module.parameters()))
    mx.eval(weights)
    return weights
