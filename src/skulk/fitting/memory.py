"""Memory admission: what one shard needs on one node, and what that node can give it.

A node admits a shard when the shard's need is strictly less than the node's usable
memory. Memory is always judged per node: two half-full nodes never add up to one.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil
from typing import Literal

from skulk.fitting.engines import engine_fit
from skulk.shared.types.instances import ShardAssignment
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

MIB = 1024**2
GIB = 1024**3

# Context each placement reserves KV for, unless the model's own context is shorter. It is
# also the instance's context ceiling, so what is admitted is what was reserved.
KV_CONTEXT_BUDGET_TOKENS = 8192

HostKind = Literal["cpu", "unified"]


@dataclass(frozen=True)
class HostMemory:
    """How much of one kind of machine's memory a runner may take."""

    # Share of physical memory a model may occupy at most, whatever is free.
    working_set_fraction: float
    # Fixed cost paid once per shard on top of weights and KV.
    floor_bytes: int


HOST_MEMORY: Mapping[HostKind, HostMemory] = {
    # Linux on CPU: MemAvailable already counts reclaimable page cache as available and
    # no GPU carves anything out, so all of it is usable. The floor pays for the runner
    # process itself (Python, numpy and the engine's libraries, ~250 MB before weights)
    # and leaves the kernel room before the OOM killer steps in.
    "cpu": HostMemory(working_set_fraction=1.0, floor_bytes=512 * MIB),
    # Apple unified memory: the GPU shares RAM and Metal wires at most ~75% of it (its
    # recommended working set). macOS compresses and swaps long before free memory reaches
    # zero and the window server needs its share, so the floor is larger.
    "unified": HostMemory(working_set_fraction=0.75, floor_bytes=1 * GIB),
}

# Backend compute tags (after the engine's `-`) that mean the node's memory is unified.
UNIFIED_MEMORY_COMPUTE = frozenset({"metal"})


def host_kind(node: NodeTelemetry) -> HostKind:
    """Unified when the node advertises a GPU backend that shares system memory."""
    computes = {tag.split("-", 1)[1] for tag in node.backends if "-" in tag}
    return "unified" if computes & UNIFIED_MEMORY_COMPUTE else "cpu"


def usable_bytes(node: NodeTelemetry) -> int:
    """Memory this node can give to new shards: available, capped by its working set."""
    cap = int(node.memory_total_bytes * HOST_MEMORY[host_kind(node)].working_set_fraction)
    return max(0, min(node.memory_available_bytes, cap))


def context_token_limit(card: ModelCard) -> int:
    """The instance's context ceiling: a function of the card alone, so ranks agree."""
    return min(card.context_length, KV_CONTEXT_BUDGET_TOKENS)


@dataclass(frozen=True)
class ShardShare:
    """The part of a model one shard holds."""

    layers: int  # layers whose KV the shard caches
    weight_numerator: int  # the shard holds numerator / denominator of the weights
    weight_denominator: int
    kv_heads: int  # KV heads per layer the shard caches


def whole_model(card: ModelCard) -> ShardShare:
    """The share of a shard that holds the whole model."""
    return ShardShare(layers=card.n_layers, weight_numerator=1, weight_denominator=1,
                      kv_heads=card.num_key_value_heads)


def shard_share(card: ModelCard, sharding: str, shard: ShardAssignment) -> ShardShare:
    """The share of the model one placed shard holds (as its plan computed it)."""
    if shard.world_size == 1:
        return whole_model(card)
    if sharding == "tensor":
        return ShardShare(layers=card.n_layers, weight_numerator=1,
                          weight_denominator=shard.world_size,
                          kv_heads=card.num_key_value_heads // shard.world_size)
    layers = shard.end_layer - shard.start_layer
    return ShardShare(layers=layers, weight_numerator=layers, weight_denominator=card.n_layers,
                      kv_heads=card.num_key_value_heads)


def kv_reservation_bytes(card: ModelCard, engine: EngineName, share: ShardShare,
                         contexts: int = 1) -> int:
    """KV cache for the context ceiling, `contexts` times (see `kv_contexts_on`): keys and
    values, per layer, per KV head."""
    head_dim = card.attention_head_dim
    kv_bytes = engine_fit(engine).kv_bytes_per_value
    per_token = 2 * share.layers * share.kv_heads * head_dim * kv_bytes
    return per_token * context_token_limit(card) * contexts


def kv_contexts_on(node: NodeTelemetry, engine: EngineName, share: ShardShare) -> int:
    """Whole contexts of KV cells a runner of the share holds on `node`, as the node reads
    them out (1 from a node that does not say); 1 for a whole model on a `--no-batching`
    node, which runs one sequence."""
    whole = share.weight_numerator == share.weight_denominator
    return 1 if whole and not node.batching else node.kv_contexts.get(engine, 1)


def resident_weights_bytes(card: ModelCard, engine: EngineName, share: ShardShare) -> int:
    """The share's weights as the engine holds them: size on disk x its overhead."""
    description = engine_fit(engine)
    source = card.source_for(description.weight_format)
    if source is None:
        raise ValueError(f"{card.model_id} has no {description.weight_format} weights for "
                         f"{engine}")
    weights = source.size_bytes * share.weight_numerator / share.weight_denominator
    return ceil(weights * description.overhead_factor)


def shard_need_bytes(card: ModelCard, engine: EngineName, share: ShardShare,
                     node: NodeTelemetry) -> int:
    """Weights share x engine overhead + KV reservation + the host's floor."""
    floor = HOST_MEMORY[host_kind(node)].floor_bytes
    return (resident_weights_bytes(card, engine, share)
            + kv_reservation_bytes(card, engine, share, kv_contexts_on(node, engine, share))
            + floor)


def admits(need: int, usable: int) -> bool:
    """Strictly less: an exact fit leaves nothing for the allocator's next page."""
    return need < usable


def gib(value: int) -> str:
    """Bytes as GiB with two decimals, for messages."""
    return f"{value / GIB:.2f} GiB"
