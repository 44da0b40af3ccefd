"""Gemma 3 (text): a bfloat16-rounded embedding scale and sliding-window layers; split by
layers or by heads (the split of the MLX engine's `head_split.py`: mlx-lm's model has no
`shard`)."""

from typing import TYPE_CHECKING, Any

from skulk.model_families.family import PIPELINE_AND_TENSOR, ModelFamily
from skulk.model_families.quirks import Plain

if TYPE_CHECKING:
    import mlx.core as mx


class Gemma3Quirks(Plain):
    """Gemma 3 scales the embedding by sqrt(hidden size) rounded to bfloat16, and all but
    every `sliding_window_pattern`-th layer attend over a sliding window."""

    def embed(self, model: Any, tokens: "mx.array") -> "mx.array":
        import mlx.core as mx

        hidden: mx.array = model.model.embed_tokens(tokens)
        scale = mx.array(model.args.hidden_size**0.5, mx.bfloat16).astype(hidden.dtype)
        return hidden * scale

    def window(self, model: Any, layer: Any) -> int | None:
        if layer.self_attn.is_sliding:
            size: int = model.args.sliding_window
            return size
        return None


FAMILY = ModelFamily(
    model_type="gemma3_text",
    splits=PIPELINE_AND_TENSOR,
    quirks=Gemma3Quirks(),
    # Every other layer slides over a window shorter than the test prompts.
    tiny_config={"head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 4,
                 "sliding_window_pattern": 2, "rope_local_base_freq": 10000.0},
)
