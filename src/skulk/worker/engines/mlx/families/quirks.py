"""Where mlx-lm's model families differ around their decoder layers, each in one named place.

A pipeline stage runs mlx-lm's own layers, but it cannot call the model's `__call__` (that
runs every layer), so the few lines around the layers are repeated here per family, as
mlx-lm writes them: how tokens are embedded, which layers attend over a sliding window,
and how the final hidden states become logits. Everything else (attention, rotary
embeddings, norms, MLPs, per-layer settings) is mlx-lm's code, unchanged.
"""

import importlib
from typing import Any

import mlx.core as mx

nn: Any = importlib.import_module("mlx.nn")


class Plain:
    """Embedding, full attention in every layer, final norm, then the head: Llama,
    Mistral, Qwen2, Qwen3, Phi-3 (mlx-lm's own model classes for each)."""

    whole_model_is_mlx_lm = True
    """One node runs mlx-lm's whole model; False: one stage of every layer instead, for a
    family whose mlx-lm model mishandles something the stage gets right."""

    def embed(self, model: Any, tokens: mx.array) -> mx.array:
        hidden: mx.array = model.model.embed_tokens(tokens)
        return hidden

    def window(self, model: Any, layer: Any) -> int | None:
        """The attention window of one decoder layer, None for full attention."""
        return None

    def layer_mask(self, layer: Any, mask: mx.array | str | None) -> mx.array | str | None:
        """The mask as this layer's attention wants it."""
        return mask

    def logits(self, model: Any, normed: mx.array) -> mx.array:
        """The output head on final-normed hidden states: the embedding matrix when the
        checkpoint ties them (mlx-lm then builds no `lm_head`), else `lm_head`."""
        if "lm_head" in model:
            head: mx.array = model.lm_head(normed)
            return head
        tied: mx.array = model.model.embed_tokens.as_linear(normed)
        return tied


class LlamaQuirks(Plain):
    """Llama checkpoints may mark layers `sliding_attention` in `layer_types`."""

    def window(self, model: Any, layer: Any) -> int | None:
        if getattr(layer, "use_sliding", False):
            size: int = model.model.sliding_window
            return size
        return None


class Gemma2Quirks(Plain):
    """Gemma 2 scales the embedding by sqrt(hidden size), always ties the head, and caps
    the logits with a tanh.

    Its attention (mlx-lm 0.32) adds the mask to scores shaped [B, kv_heads, repeats, L,
    S] without giving the mask the repeats axis, so a batch's [B, 1, L, S] mask lines its
    batch axis up with the KV heads: rows of a left-padded batch get each other's padding.
    The stage inserts that axis, and one node runs the stage rather than mlx-lm's model.
    """

    whole_model_is_mlx_lm = False

    def layer_mask(self, layer: Any, mask: mx.array | str | None) -> mx.array | str | None:
        if isinstance(mask, mx.array) and mask.ndim == 4 and layer.self_attn.repeats > 1:
            return mx.expand_dims(mask, 2)
        return mask

    def embed(self, model: Any, tokens: mx.array) -> mx.array:
        hidden: mx.array = model.model.embed_tokens(tokens)
        scale: float = model.args.hidden_size**0.5
        return hidden * scale

    def logits(self, model: Any, normed: mx.array) -> mx.array:
        cap: float = model.final_logit_softcapping
        out: mx.array = model.model.embed_tokens.as_linear(normed)
        capped: mx.array = mx.tanh(out / cap) * cap
        return capped


class Gemma3Quirks(Plain):
    """Gemma 3 scales the embedding by sqrt(hidden size) rounded to bfloat16, and all but
    every `sliding_window_pattern`-th layer attend over a sliding window."""

    def embed(self, model: Any, tokens: mx.array) -> mx.array:
        hidden: mx.array = model.model.embed_tokens(tokens)
        scale = mx.array(model.args.hidden_size**0.5, mx.bfloat16).astype(hidden.dtype)
        return hidden * scale

    def window(self, model: Any, layer: Any) -> int | None:
        if layer.self_attn.is_sliding:
            size: int = model.args.sliding_window
            return size
        return None


PLAIN = Plain()
