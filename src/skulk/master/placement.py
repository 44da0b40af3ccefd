"""Placement: a pure choice of where an instance runs, or a typed reason it cannot.

Single-node placement for now; multi-node pipeline and tensor splits extend `place`.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from skulk.shared.types.commands import PlaceInstance
from skulk.shared.types.ids import NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

# Weights are mapped plus scratch buffers and allocator slack; 1.25x covers llama.cpp's
# compute buffers on CPU for the models we have measured.
ENGINE_OVERHEAD_FACTOR = 1.25
# Memory a node keeps for its OS and the node process itself.
MEMORY_FLOOR_BYTES = 512 * 1024 * 1024
# Context a placement reserves KV for, unless the model's own context is shorter.
KV_CONTEXT_BUDGET_TOKENS = 8192
KV_BYTES_PER_VALUE = 2  # f16 cache

ENGINE_FOR_FORMAT: Mapping[str, EngineName] = {"gguf": "llama_cpp", "mlx": "mlx"}


@dataclass(frozen=True)
class PlacementError:
    """Why a model cannot be placed; `per_node` says, node by node, what did not fit."""

    message: str
    per_node: Mapping[NodeId, str]

    def describe(self) -> str:
        reasons = "; ".join(f"{node}: {why}" for node, why in sorted(self.per_node.items()))
        return f"{self.message}" + (f" ({reasons})" if reasons else "")


def context_token_limit(card: ModelCard) -> int:
    return min(card.context_length, KV_CONTEXT_BUDGET_TOKENS)


def kv_reservation_bytes(card: ModelCard, tokens: int) -> int:
    head_dim = card.hidden_size // card.num_attention_heads
    per_token = 2 * card.n_layers * card.num_key_value_heads * head_dim * KV_BYTES_PER_VALUE
    return per_token * tokens


def memory_needed_bytes(card: ModelCard) -> int:
    weights = int(card.storage_size * ENGINE_OVERHEAD_FACTOR)
    return weights + kv_reservation_bytes(card, context_token_limit(card)) + MEMORY_FLOOR_BYTES


def _engine_for(card: ModelCard, pinned: EngineName | None) -> EngineName | None:
    engines = [ENGINE_FOR_FORMAT[s.format] for s in card.sources]
    if pinned is not None:
        return pinned if pinned in engines else None
    return engines[0] if engines else None


def _refusal(node: NodeTelemetry, engine: EngineName, needed: int) -> str | None:
    if not node.has_worker:
        return "runs no worker"
    if not any(tag.split("-")[0] == engine for tag in node.backends):
        return f"has no {engine} backend (has {', '.join(node.backends) or 'none'})"
    if node.memory_available_bytes < needed:
        gib = 1024**3
        return (f"needs {needed / gib:.2f} GiB, has {node.memory_available_bytes / gib:.2f} "
                "GiB available")
    return None


def place(
    command: PlaceInstance,
    card: ModelCard,
    nodes: Mapping[NodeId, NodeTelemetry],
    runner_id: RunnerId,
) -> Instance | PlacementError:
    """Choose the node with the most available memory that can run `card` whole."""
    engine = _engine_for(card, command.engine)
    if engine is None:
        formats = ", ".join(s.format for s in card.sources)
        return PlacementError(f"{card.model_id} has no weights for engine "
                              f"{command.engine} (has {formats})", {})
    if command.min_nodes > 1 or command.sharding == "tensor":
        return PlacementError("splitting a model across nodes needs the mlx engine, "
                              "which this node does not offer yet; use min_nodes=1", {})
    needed = memory_needed_bytes(card)
    refusals: dict[NodeId, str] = {}
    fits: list[NodeTelemetry] = []
    for node_id, node in nodes.items():
        why = ("excluded by the request" if node_id in command.excluded_nodes
               else _refusal(node, engine, needed))
        if why is None:
            fits.append(node)
        else:
            refusals[node_id] = why
    if not fits:
        message = f"no node can hold {card.model_id}" if nodes else "no worker node is live"
        return PlacementError(message, refusals)
    chosen = max(fits, key=lambda n: (n.memory_available_bytes, n.node_id))
    shard = ShardAssignment(node_id=chosen.node_id, rank=0, world_size=1,
                            start_layer=0, end_layer=card.n_layers)
    return Instance(instance_id=command.instance_id, model_id=card.model_id, engine=engine,
                    sharding=command.sharding, shards={runner_id: shard},
                    context_token_limit=context_token_limit(card))
