"""GPU offload: how many of a shard's layers go to a node's GPU, and what the shard then
needs of GPU memory and of system memory.

An engine that offloads layers (llama.cpp) puts each offloaded layer's weights and KV
cache in GPU memory and keeps the rest in system memory. A discrete GPU (CUDA, Vulkan)
takes as many whole layers as its free memory holds after a fixed reserve; Apple's GPU
(Metal) shares system memory, so it takes every layer and the need stays where it was,
judged against the unified host's working set. A node without GPUs, or an engine that
does not offload, needs what `memory.shard_need_bytes` says, as before.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil

from skulk.fitting.engines import engine_fit
from skulk.fitting.memory import (
    GIB,
    UNIFIED_MEMORY_COMPUTE,
    ShardShare,
    admits,
    kv_contexts_on,
    kv_reservation_bytes,
    resident_weights_bytes,
    shard_need_bytes,
    usable_bytes,
)
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import GpuDevice, NodeTelemetry

# Per GPU used: the driver's context (CUDA's is ~300-500 MB) and llama.cpp's compute
# buffer at the context ceiling (a few hundred MB for mid-size models).
GPU_RESERVE_BYTES = 1 * GIB


@dataclass(frozen=True)
class ShardNeed:
    """What one shard takes on one node."""

    system_bytes: int  # system memory: weights, KV and floor of the layers left on the CPU
    gpu_layers: int = 0  # of the shard's layers, those on the GPU
    vram_bytes: int = 0  # discrete GPU memory for them, reserves included
    vram_usable_bytes: int = 0  # free memory of the GPUs that take them

    def admitted_by(self, usable: int) -> bool:
        """Whether `usable` system memory, and the GPUs' free memory, admit it."""
        gpu_fits = self.vram_bytes == 0 or admits(self.vram_bytes, self.vram_usable_bytes)
        return admits(self.system_bytes, usable) and gpu_fits


def offload_gpus(node: NodeTelemetry, engine: EngineName) -> list[GpuDevice]:
    """The node's GPUs `engine` offloads to: those of the compute its backend tag names
    (`llama_cpp-cuda` -> the CUDA devices); none for an engine that does not offload."""
    if not engine_fit(engine).offloads_layers:
        return []
    computes = {compute for tag in node.backends
                for name, _, compute in [tag.partition("-")] if name == engine}
    return [gpu for gpu in node.gpus if gpu.backend in computes]


def _layer_bytes(weights: int, kv: int, layers: int) -> int:
    """One layer's bytes, taking every layer of a share as equal (an upper bound)."""
    return ceil(weights / layers) + ceil(kv / layers)


def _taking(gpus: Sequence[GpuDevice], layer_bytes: int) -> list[tuple[GpuDevice, int]]:
    """The GPUs with room for at least one layer after their reserve, and how many layers
    each holds (strictly less than its free memory, as `admits` wants)."""
    holding = [(gpu, (gpu.vram_free_bytes - GPU_RESERVE_BYTES - 1) // layer_bytes)
               for gpu in gpus]
    return [(gpu, count) for gpu, count in holding if count > 0]


def shard_need(card: ModelCard, engine: EngineName, share: ShardShare, node: NodeTelemetry,
               gpu_layers: int | None = None) -> ShardNeed:
    """What the share needs on `node`, offloading `gpu_layers` of its layers; None offloads
    as many as fit (placement's choice, which the master stamps and the worker re-checks)."""
    gpus = offload_gpus(node, engine)
    need = shard_need_bytes(card, engine, share, node)
    if not gpus or gpu_layers == 0:
        return ShardNeed(system_bytes=need)
    if any(gpu.backend in UNIFIED_MEMORY_COMPUTE for gpu in gpus):
        layers = share.layers if gpu_layers is None else min(gpu_layers, share.layers)
        return ShardNeed(system_bytes=need, gpu_layers=layers)
    weights = resident_weights_bytes(card, engine, share)
    kv = kv_reservation_bytes(card, engine, share, kv_contexts_on(node, engine, share))
    taking = _taking(gpus, _layer_bytes(weights, kv, share.layers))
    fitting = min(share.layers, sum(count for _, count in taking))
    layers = fitting if gpu_layers is None else min(gpu_layers, share.layers)
    if layers == 0:
        return ShardNeed(system_bytes=need)
    offloaded = ceil(weights * layers / share.layers) + kv * layers // share.layers
    return ShardNeed(system_bytes=need - offloaded, gpu_layers=layers,
                     vram_bytes=offloaded + GPU_RESERVE_BYTES * max(1, len(taking)),
                     vram_usable_bytes=sum(gpu.vram_free_bytes for gpu, _ in taking))


def capacity_bytes(node: NodeTelemetry, engine: EngineName) -> int:
    """What a node can give `engine`'s shards: usable system memory plus the free memory
    of the discrete GPUs it offloads to, past their reserves. Ranks nodes and sizes
    pipeline shares; admission itself is `shard_need`'s."""
    discrete = [g for g in offload_gpus(node, engine) if g.backend not in UNIFIED_MEMORY_COMPUTE]
    return usable_bytes(node) + sum(max(0, g.vram_free_bytes - GPU_RESERVE_BYTES)
                                    for g in discrete)
