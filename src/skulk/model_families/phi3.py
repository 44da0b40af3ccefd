"""Phi-3: the plain model, split by layers or by heads (its fused qkv and gate/up
projections split block by block: the MLX engine's `head_split.py`)."""

from skulk.model_families.family import PIPELINE_AND_TENSOR, ModelFamily
from skulk.model_families.quirks import PLAIN

FAMILY = ModelFamily(
    model_type="phi3",
    splits=PIPELINE_AND_TENSOR,
    quirks=PLAIN,
    tiny_config={"tie_word_embeddings": False},
)
