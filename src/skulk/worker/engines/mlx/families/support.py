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
    "gemma2": PIPELINE_ONLY,
    "gemma3_text": PIPELINE_ONLY,
    "phi3": PIPELINE_ONLY,
}
"""Every `model_type` a split supports, and the shardings it supports."""

_NO_TENSOR_WHY = ("mlx-lm's model has no head split for it (its attention or MLP is laid "
                  "out differently); use a pipeline split")


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
