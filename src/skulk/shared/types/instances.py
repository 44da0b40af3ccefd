"""Instances: one placed copy of a model, split into shards, one runner per shard."""

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import InstanceId, ModelId, NodeId, RunnerId
from skulk.shared.types.model_cards import EngineName

Sharding = Literal["pipeline", "tensor"]


class ShardAssignment(WireModel):
    """One rank of an instance: which node runs it and which layers it holds."""

    node_id: NodeId = Field(description="Node that runs this shard's runner.")
    rank: int = Field(description="Rank of this shard within the instance, from 0.")
    world_size: int = Field(description="Number of shards in the instance.")
    start_layer: int = Field(description="First layer held.")
    end_layer: int = Field(description="One past the last layer held: the shard holds "
                           "layers `start_layer` to `end_layer - 1` (shown to people as "
                           "that inclusive range, e.g. `layers 0–14`).")
    ring_host: str | None = Field(
        default=None,
        description="Address this rank's ring neighbour reaches it at, chosen by the master "
        "from observed reachability; None when the instance has no ring.")
    gpu_layers: int = Field(
        default=0, ge=0,
        description="How many of this shard's layers its engine puts on the node's GPU, "
        "chosen by the master from the GPU's free memory (llama.cpp's `n_gpu_layers`; the "
        "shard's whole layer count means all of it); 0: everything on the CPU.")


class Instance(WireModel):
    """A placed model: the decisions every rank must agree on are stamped here."""

    instance_id: InstanceId = Field(description="Id of this instance.")
    model_id: ModelId = Field(description="Model this instance serves.")
    engine: EngineName = Field(description="Engine resolved at placement.")
    sharding: Sharding = Field(description="How the model is split across shards.")
    shards: Mapping[RunnerId, ShardAssignment] = Field(
        description="One shard per runner."
    )
    context_token_limit: int = Field(
        description="Longest prompt plus output, in tokens, this instance admits."
    )
    ring_port: int | None = Field(
        default=None,
        description="First port of the instance's ring: rank r listens on ring_port + r. "
        "Set by the master for multi-node MLX instances; None when there is no ring.")
    drafter_node: NodeId | None = Field(
        default=None,
        description="The node whose drafter serves this instance's `remote` speculative "
        "decoding, chosen by the master from capability cards (another node when one "
        "advertises a drafter); None: no remote drafter.")
    replaced: int = Field(
        default=0, description="How many times this model was placed again because a rank "
        "of a split instance ended (the master stops after a few).")
    pinned: bool = Field(
        default=False, description="Placed by a node's `--serve`: never removed for "
        "idleness nor evicted to make room.")

    def runner_on(self, node_id: NodeId) -> RunnerId | None:
        return next((r for r, s in self.shards.items() if s.node_id == node_id), None)
