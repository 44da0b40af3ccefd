"""Where a model family differs around its decoder layers: `Plain` is the model most
families are, and a family's module subclasses it where its model differs.

A pipeline stage runs mlx-lm's own layers, but it cannot call the model's `__call__` (that
runs every layer), so the few lines around the layers are repeated per family, as mlx-lm
writes them: how tokens are embedded, which layers attend over a sliding window, and how
the final hidden states become logits. Everything else (attention, rotary embeddings,
norms, MLPs, per-layer settings) is mlx-lm's code, unchanged.

mlx is imported only where a method needs it: the node process reads the families for
placement and must not load MLX; the methods run only in an MLX runner.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mlx.core as mx


class Plain:
    """Embedding, full attention in every layer, final norm, then the head: Llama,
    Mistral, Qwen2, Qwen3, Phi-3 (mlx-lm's own model classes for each)."""

    whole_model_is_mlx_lm = True
    """One node runs mlx-lm's whole model; False: one stage of every layer instead, for a
    family whose mlx-lm model mishandles something the stage gets right."""

    def embed(self, model: Any, tokens: "mx.array") -> "mx.array":
        hidden: mx.array = model.model.embed_tokens(tokens)
        return hidden

    def window(self, model: Any, layer: Any) -> int | None:
        """The attention window of one decoder layer, None for full attention."""
        return None

    def layer_mask(self, layer: Any, mask: "mx.array | str | None"
                   ) -> "mx.array | str | None":
        """The mask as this layer's attention wants it."""
        return mask

    def logits(self, model: Any, normed: "mx.array") -> "mx.array":
        """The output head on final-normed hidden states: the embedding matrix when the
        checkpoint ties them (mlx-lm then builds no `lm_head`), else `lm_head`."""
        if "lm_head" in model:
            head: mx.array = model.lm_head(normed)
            return head
        tied: mx.array = model.model.embed_tokens.as_linear(normed)
        return tied


PLAIN = Plain()
