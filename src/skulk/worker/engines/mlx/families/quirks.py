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

    def embed(self, model: Any, tokens: mx.array) -> mx.array:
        hidden: mx.array = model.model.embed_tokens(tokens)
        return hidden

    def window(self, model: Any, layer: Any) -> int | None:
        """The attention window of one decoder layer, None for full attention."""
        return None

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
    the logits with a tanh."""

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
