"""Qwen3: the plain model (its qk-norms are inside mlx-lm's attention), split by layers or
by heads."""

from skulk.model_families.family import PIPELINE_AND_TENSOR, ModelFamily
from skulk.model_families.quirks import PLAIN

FAMILY = ModelFamily(
    model_type="qwen3",
    splits=PIPELINE_AND_TENSOR,
    quirks=PLAIN,
    tiny_config={"tie_word_embeddings": False, "head_dim": 24},
)
