"""Mistral: mlx-lm runs Mistral checkpoints as Llamas, so it has Llama's quirks."""

from skulk.model_families.family import PIPELINE_AND_TENSOR, ModelFamily
from skulk.model_families.llama import LlamaQuirks

FAMILY = ModelFamily(
    model_type="mistral",
    splits=PIPELINE_AND_TENSOR,
    quirks=LlamaQuirks(),
    tiny_config={"tie_word_embeddings": False, "head_dim": 16},
)
