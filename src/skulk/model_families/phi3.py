"""Phi-3: the plain model, split by layers only (its fused qkv and gate/up projections
take no plain row split)."""

from skulk.model_families.family import PIPELINE_ONLY, ModelFamily
from skulk.model_families.quirks import PLAIN

FAMILY = ModelFamily(
    model_type="phi3",
    splits=PIPELINE_ONLY,
    quirks=PLAIN,
    tiny_config={"tie_word_embeddings": False},
)
