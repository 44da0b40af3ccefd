"""Llama: split by layers or by heads; its checkpoints may mark layers
`sliding_attention` in `layer_types`."""

from typing import Any

from skulk.model_families.family import PIPELINE_AND_TENSOR, ModelFamily
from skulk.model_families.quirks import Plain


class LlamaQuirks(Plain):
    """Llama checkpoints may mark layers `sliding_attention` in `layer_types`."""

    def window(self, model: Any, layer: Any) -> int | None:
        if getattr(layer, "use_sliding", False):
            size: int = model.model.sliding_window
            return size
        return None


FAMILY = ModelFamily(
    model_type="llama",
    splits=PIPELINE_AND_TENSOR,
    quirks=LlamaQuirks(),
    tiny_config={"tie_word_embeddings": True},
)
