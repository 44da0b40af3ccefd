"""GGUF files and Hugging Face directories → MLX models in the node's model store.

`ensure_mlx_model` is what a worker calls; `skulk models import` drives `store` directly.
The heavy modules (mlx, gguf, tokenizers) load on first call, not on import, so nodes
that never touch MLX do not pay for them.
"""

from pathlib import Path

from skulk.models.catalog import ModelCatalog
from skulk.shared.types.model_cards import ModelCard


def ensure_mlx_model(catalog: ModelCatalog, card: ModelCard, q_bits: int | None = None) -> Path:
    """The MLX directory of `card` in the store, imported from its local GGUF on first use.

    Blocking (seconds); safe to call from several processes at once (a per-model file
    lock makes one import and the others wait for it). Raises FileNotFoundError when
    neither the MLX copy nor a GGUF is on this node, ValueError for a GGUF it cannot
    convert.
    """
    from skulk.models.mlx_import.store import ensure_mlx_model as ensure

    return ensure(catalog, card, q_bits)


__all__ = ["ensure_mlx_model"]
