"""The Llama family: pipeline stages and tensor-parallel shards."""

from skulk.worker.engines.mlx.families.llama.family import LLAMA, LlamaFamily

__all__ = ["LLAMA", "LlamaFamily"]
