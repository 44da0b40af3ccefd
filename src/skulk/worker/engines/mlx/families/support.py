"""Which model families the sharded MLX engines split, and how; imports nothing of mlx, so
placement can refuse a split before any node tries it.

Keyed by config.json's `model_type`. `registry.py` holds the code of each family; a test
keeps the two in step.
"""

from skulk.shared.types.instances import Sharding

PIPELINE_ONLY: frozenset[Sharding] = frozenset({"pipeline"})
BOTH: frozenset[Sharding] = frozenset({"pipeline", "tensor"})

SPLITS: dict[str, frozenset[Sharding]] = {
    "llama": BOTH,
    "mistral": BOTH,  # mlx-lm runs Mistral checkpoints as Llamas
    "qwen2": BOTH,
    "qwen3": BOTH,
    # mlx-lm's Gemma 2 attention adds a batch's [B, 1, L, S] mask to scores shaped
    # [B, kv_heads, repeats, L, S]: split heads leave one KV head per rank and the batch
    # axis then broadcasts into it, so it is not split by heads.
    "gemma2": PIPELINE_ONLY,
    "gemma3_text": BOTH,  # by heads: the split of head_split.py (mlx-lm's has no shard)
    "phi3": PIPELINE_ONLY,  # fused qkv and gate/up projections: no plain row split
}
"""Every `model_type` a split supports, and the shardings it supports."""

_NO_TENSOR_WHY = ("mlx-lm's attention for it does not take a plain head split (fused "
                  "projections, or masks that do not survive one); use a pipeline split")


def split_refusal(model_type: str, sharding: Sharding, width: int) -> str | None:
    """Why a model of this type cannot be split `width` ways by `sharding`, or None.
    A width of one is the whole model, which mlx-lm runs for any family it knows."""
    if width <= 1:
        return None
    supported = SPLITS.get(model_type)
    if supported is None:
        kinds = ", ".join(sorted(SPLITS))
        return (f"{model_type}: {sharding} sharding not supported yet (MLX splits "
                f"{kinds}); serve it on one node")
    if sharding not in supported:
        return f"{model_type}: {sharding} sharding not supported: {_NO_TENSOR_WHY}"
    return None
