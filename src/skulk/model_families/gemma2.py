"""Gemma 2: a scaled embedding, a tied and capped head, and a mask mlx-lm's batched
attention gets wrong; split by layers or by heads (both run its layers with the mask
below, never mlx-lm's whole model)."""

from typing import TYPE_CHECKING, Any

from skulk.model_families.family import PIPELINE_AND_TENSOR, ModelFamily
from skulk.model_families.quirks import Plain

if TYPE_CHECKING:
    import mlx.core as mx


class Gemma2Quirks(Plain):
    """Gemma 2 scales the embedding by sqrt(hidden size), always ties the head, and caps
    the logits with a tanh.

    Its attention (mlx-lm 0.32) adds the mask to scores shaped [B, kv_heads, repeats, L,
    S] without giving the mask the repeats axis, so a batch's [B, 1, L, S] mask lines its
    batch axis up with the KV heads: rows of a left-padded batch get each other's padding.
    The stage inserts that axis, and one node runs the stage rather than mlx-lm's model.
    """

    whole_model_is_mlx_lm = False

    def layer_mask(self, layer: Any, mask: "mx.array | str | None"
                   ) -> "mx.array | str | None":
        import mlx.core as mx

        if isinstance(mask, mx.array) and mask.ndim == 4 and layer.self_attn.repeats > 1:
            return mx.expand_dims(mask, 2)
        return mask

    def embed(self, model: Any, tokens: "mx.array") -> "mx.array":
        hidden: mx.array = model.model.embed_tokens(tokens)
        scale: float = model.args.hidden_size**0.5
        return hidden * scale

    def logits(self, model: Any, normed: "mx.array") -> "mx.array":
        import mlx.core as mx

        cap: float = model.final_logit_softcapping
        out: mx.array = model.model.embed_tokens.as_linear(normed)
        capped: mx.array = mx.tanh(out / cap) * cap
        return capped


FAMILY = ModelFamily(
    model_type="gemma2",
    # By heads too: a rank's attention keeps the same repeats (query heads per KV head),
    # so the mask above gets the same axis split or not.
    splits=PIPELINE_AND_TENSOR,
    quirks=Gemma2Quirks(),
    tiny_config={"head_dim": 16, "query_pre_attn_scalar": 16,
                 "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0},
)
