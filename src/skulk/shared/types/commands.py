"""Commands: requests in the imperative, sent to the master."""

from typing import Annotated, Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.tasks import GenerationParams

PlacementPreference = Literal["auto", "fewest_nodes", "speed"]


class PlaceInstance(WireModel):
    """Place a model on the cluster under a pre-minted instance id."""

    kind: Literal["PlaceInstance"] = "PlaceInstance"
    command_id: CommandId = Field(description="Id of this command.")
    instance_id: InstanceId = Field(description="Id the new instance will have.")
    model_id: ModelId = Field(description="Model to place.")
    engine: EngineName | None = Field(default=None, description="Pin an engine.")
    sharding: Sharding = Field(default="pipeline", description="How to split it.")
    min_nodes: int = Field(
        default=1, ge=1,
        description="Use at least this many nodes (capped at the number of usable nodes).")
    excluded_nodes: list[NodeId] = Field(
        default_factory=list, description="Nodes not to use."
    )
    prefer: PlacementPreference = Field(
        default="auto", description="`auto`: the narrowest plan that fits, unless a wider "
        "plan of the same engine over machines that run nothing else is predicted, from "
        "measurements, to decode at least 1.5x faster (a split by heads on a fast link); "
        "`fewest_nodes`: the narrowest plan that fits, split as `sharding` says; `speed`: "
        "of every plan that fits (one node, a pipeline or a split by heads over min_nodes "
        "or more), the one predicted to decode fastest.")
    pinned: bool = Field(default=False, description="Keep it however long it idles (a "
                         "node's `--serve`); it is never evicted to make room either.")
    unless_served: bool = Field(
        default=False, description="Place it only if no instance of the model is placed "
        "when the master handles the command (automatic placement: a request and the "
        "master's own replacement of a lost instance must not place the model twice).")


class DeleteInstance(WireModel):
    """Remove an instance; its tasks fail first."""

    kind: Literal["DeleteInstance"] = "DeleteInstance"
    command_id: CommandId = Field(description="Id of this command.")
    instance_id: InstanceId = Field(description="Instance to remove.")
    reason: str = Field(default="deleted on request", max_length=4096,
                        description="Why, as the master logs it and the instance's "
                        "removal tells whoever waited for it (a worker that gives up says "
                        "what failed).")


class RefusePlacement(WireModel):
    """A worker cannot hold its shard: its live memory says no. The master re-places the
    instance one node wider, or removes it when it is already as wide as the cluster."""

    kind: Literal["RefusePlacement"] = "RefusePlacement"
    command_id: CommandId = Field(description="Id of this command.")
    instance_id: InstanceId = Field(description="Instance whose shard is refused.")
    node_id: NodeId = Field(description="Node that refuses its shard.")
    reason: str = Field(description="Why, e.g. what the shard needs and what is free.")


class ReplaceInstance(WireModel):
    """A rank of a split instance failed and the others cannot go on without it: remove the
    instance and place it again at the same width (a fresh ring), if it still fits."""

    kind: Literal["ReplaceInstance"] = "ReplaceInstance"
    command_id: CommandId = Field(description="Id of this command.")
    instance_id: InstanceId = Field(description="Instance to place again.")
    reason: str = Field(description="What failed.")
    failed_node: NodeId | None = Field(
        default=None, description="The node whose runner failed (missed a deadline): it "
        "cools off, and the instance goes elsewhere if anything else fits.")


class TextGeneration(WireModel):
    """Generate text; output streams to `owner_node` on the data plane."""

    kind: Literal["TextGeneration"] = "TextGeneration"
    command_id: CommandId = Field(description="Id of this command and its stream.")
    owner_node: NodeId = Field(description="API node that streams the output.")
    params: GenerationParams = Field(description="What to generate.")
    excluded_instances: list[InstanceId] = Field(
        default_factory=list, description="Instances not to use: the ones that failed "
        "this request before (a request failing over).")
    bounded: bool = Field(
        default=False, description="Refuse (`overloaded`) when every instance of the "
        "model is full instead of queueing without bound; a failing-over request, already "
        "admitted once, is not bounded.")
    max_queue: int | None = Field(
        default=None, ge=0, description="With `bounded`: most requests waiting for a slot "
        "on an instance (`--max-queue`); None: 16 per slot of its batch.")


class CancelTask(WireModel):
    """Stop the generation started by `target_command_id`."""

    kind: Literal["CancelTask"] = "CancelTask"
    command_id: CommandId = Field(description="Id of this command.")
    target_command_id: CommandId = Field(description="Generation to stop.")


class TaskFinished(WireModel):
    """The owner has the whole output (or gave up); forget the task."""

    kind: Literal["TaskFinished"] = "TaskFinished"
    command_id: CommandId = Field(description="Id of this command.")
    target_command_id: CommandId = Field(description="Generation that ended.")


class RevokeNode(WireModel):
    """Expel a member: its messages are refused from now on, its links from each
    member's next start; its instances are removed."""

    kind: Literal["RevokeNode"] = "RevokeNode"
    command_id: CommandId = Field(description="Unique id of this command.")
    node_id: NodeId = Field(description="The member to expel.")


class ForgetMember(WireModel):
    """Remove a member that is gone for good from the agreed membership (so a side that
    will never see it again stops being a minority)."""

    kind: Literal["ForgetMember"] = "ForgetMember"
    command_id: CommandId = Field(description="Unique id of this command.")
    node_id: NodeId = Field(description="The member to forget.")


class AddModelCard(WireModel):
    """A node announces the card of a model its store holds, so every node knows it. Only
    the node itself may announce its store (the master checks the sender)."""

    kind: Literal["AddModelCard"] = "AddModelCard"
    command_id: CommandId = Field(description="Unique id of this command.")
    node_id: NodeId = Field(description="The node whose store holds the weights.")
    card: ModelCard = Field(description="The card derived from the stored weights.")


class RemoveModelCard(WireModel):
    """A node's store no longer holds a model it announced."""

    kind: Literal["RemoveModelCard"] = "RemoveModelCard"
    command_id: CommandId = Field(description="Unique id of this command.")
    node_id: NodeId = Field(description="The node whose store held the weights.")
    model_id: ModelId = Field(description="The model removed from that store.")


Command = Annotated[
    PlaceInstance
    | DeleteInstance
    | RefusePlacement
    | ReplaceInstance
    | TextGeneration
    | CancelTask
    | TaskFinished
    | RevokeNode
    | ForgetMember
    | AddModelCard
    | RemoveModelCard,
    Field(discriminator="kind"),
]


class CommandEnvelope(WireModel):
    """A command with the node that sent it."""

    origin: NodeId = Field(description="Node that sent the command.")
    command: Command = Field(description="The command.")
