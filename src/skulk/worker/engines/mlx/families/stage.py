"""A pipeline stage: mlx-lm's own model class of the family, holding only its layers.

The whole model is built as mlx-lm builds it (lazily: nothing is allocated until loaded),
so every layer keeps the index-dependent settings mlx-lm gives it (Gemma 3's sliding
layers, Llama's `layer_types`); then the layer list is cut to the stage's range and the
embedding, final norm and head are dropped where the stage does not use them. Only the
stage's tensors are then read from the checkpoint.
"""

from pathlib import Path
from typing import Any

import mlx.core as mx
from mlx.utils import tree_flatten

from skulk.model_families.quirks import Plain
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.families.checkpoint import (
    load_into,
    quantize_like_checkpoint,
    read_weights,
)
from skulk.worker.engines.mlx.families.stage_spec import StageSpec, layer_local_name

_FLOATS = (mx.float32, mx.float16, mx.bfloat16)


class Stage:
    """A contiguous run of a model's layers, with the embedding and head it needs."""

    def __init__(self, model: Any, spec: StageSpec, quirks: Plain) -> None:
        self.model = model
        self.spec = spec
        self.quirks = quirks
        self.windows = [quirks.window(model, layer) for layer in model.model.layers]

    @property
    def n_layers(self) -> int:
        return len(self.model.model.layers)

    @property
    def activation_dtype(self) -> mx.Dtype:
        """The dtype of hidden states between layers: that of the model's floating-point
        parameters (the scales, for a quantized layer)."""
        parameters: dict[str, mx.array] = dict(
            tree_flatten(self.model.model.layers[0].parameters()))
        for value in parameters.values():
            if value.dtype in _FLOATS:
                dtype: mx.Dtype = value.dtype
                return dtype
        raise ValueError("the first layer of this stage has no floating-point parameter")

    def embed(self, tokens: mx.array) -> mx.array:
        if not self.spec.embeds:
            raise RuntimeError("only the first stage embeds tokens")
        return self.quirks.embed(self.model, tokens)

    def run_layers(self, hidden: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array:
        """Hidden states through this stage's layers, appending their KV to `cache`."""
        # Every local cache holds the same positions, so the first gives every layer's
        # mask, as mlx-lm's models take it from their first (full or sliding) layer.
        masks = {window: mlx_api.attention_mask(hidden, cache[0], window)
                 for window in set(self.windows)}
        for layer, window, layer_cache in zip(self.model.model.layers, self.windows, cache,
                                              strict=True):
            hidden = layer(hidden, self.quirks.layer_mask(layer, masks[window]),
                           cache=layer_cache)
        return hidden

    def head(self, hidden: mx.array) -> mx.array:
        """Logits from the last layer's hidden states: final norm, then the output head."""
        if not self.spec.heads:
            raise RuntimeError("only the last stage applies the head")
        return self.quirks.logits(self.model, self.model.model.norm(hidden))


def _cut(model: Any, spec: StageSpec) -> None:
    """Keep the stage's layers, and the embedding, norm and head only where used."""
    inner = model.model
    inner.layers = inner.layers[spec.start_layer: spec.end_layer]
    tied = "lm_head" not in model
    if not (spec.embeds or (spec.heads and tied)):
        inner.pop("embed_tokens")
    if not spec.heads:
        inner.pop("norm")
        if not tied:
            model.pop("lm_head")


def _module_paths(model: Any) -> set[str]:
    leaves: dict[str, Any] = dict(tree_flatten(
        model.leaf_modules(), is_leaf=lambda m: hasattr(m, "parameters")))
    return set(leaves)


def load_stage(model_dir: Path, config: dict[str, Any], spec: StageSpec,
               quirks: Plain) -> Stage:
    """Build the stage from mlx-lm's model class and read only its tensors."""
    model = mlx_api.new_model(config)
    n_layers = len(model.model.layers)
    if n_layers != int(config["num_hidden_layers"]):
        raise ValueError(f"mlx-lm built {n_layers} layers for a config of "
                         f"{config['num_hidden_layers']}")
    weights = read_weights(model_dir)
    if hasattr(model, "sanitize"):
        weights = model.sanitize(weights)
    _cut(model, spec)
    kept_modules = _module_paths(model)

    def rename(path: str) -> str | None:
        local = layer_local_name(path, spec)
        if local is None:
            return None
        module = local.rsplit(".", 1)[0]
        return local if module in kept_modules or local in kept_modules else None

    selected = {local: array for name, array in weights.items()
                if (local := rename(name)) is not None}
    quantize_like_checkpoint(model, config, selected, rename)
    load_into(model, selected)
    return Stage(model, spec, quirks)
