"""Events: facts in the past tense. Only the master gives them an index."""

from typing import Annotated, Literal

from pydantic import Field, model_validator

from skulk.shared.types.base import WireModel
from skulk.shared.types.chunks import ErrorKind
from skulk.shared.types.event_source import EventSource
from skulk.shared.types.ids import (
    CommandId,
    InstanceId,
    ModelId,
    NodeId,
    RunnerId,
    SessionId,
    TaskId,
)
from skulk.shared.types.instances import Instance
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.runners import RunnerStatus
from skulk.shared.types.state import State
from skulk.shared.types.tasks import Task, TaskStatus


class InstanceCreated(WireModel):
    """The master placed a new instance."""

    kind: Literal["InstanceCreated"] = "InstanceCreated"
    instance: Instance = Field(description="The placed instance.")


class InstanceDeleted(WireModel):
    """An instance was removed; its runners shut down."""

    kind: Literal["InstanceDeleted"] = "InstanceDeleted"
    instance_id: InstanceId = Field(description="The removed instance.")
    reason: str = Field(description="Why it was removed.")
    replaced_by: InstanceId | None = Field(
        default=None, description="The instance placed in its stead (a refused shard "
        "placed wider, a failed rank's instance placed again); None when none was.")


class RunnerStatusUpdated(WireModel):
    """A worker reports a runner's new status."""

    kind: Literal["RunnerStatusUpdated"] = "RunnerStatusUpdated"
    runner_id: RunnerId = Field(description="The runner.")
    status: RunnerStatus = Field(description="Its new status.")


class WeightsFetchProgress(WireModel):
    """A worker fetching a rank's weights reports how far it got."""

    kind: Literal["WeightsFetchProgress"] = "WeightsFetchProgress"
    runner_id: RunnerId = Field(description="The rank's runner, created once they are here.")
    model_id: ModelId = Field(description="The model being fetched.")
    done_bytes: int = Field(ge=0, description="Bytes fetched so far.")
    total_bytes: int = Field(ge=0, description="Bytes in all.")
    source: str = Field(max_length=512, description="Where from: `peer NODE` or `hub REPO`.")


class WeightsReady(WireModel):
    """A rank's weights are on its node, each file checked against its sha256."""

    kind: Literal["WeightsReady"] = "WeightsReady"
    runner_id: RunnerId = Field(description="The rank's runner.")
    model_id: ModelId = Field(description="The model.")
    total_bytes: int = Field(ge=0, description="Bytes of the files the rank loads.")
    files_sha256: str = Field(max_length=64, description="sha256 over the sorted (file name, "
                              "sha256) pairs: equal on ranks that load the same files.")
    source: str = Field(max_length=512, description="Where they came from.")


class ModelCardAdded(WireModel):
    """A node's store holds a model no built-in card describes; its card is now known to
    every node, so any of them can list and place it."""

    kind: Literal["ModelCardAdded"] = "ModelCardAdded"
    card: ModelCard = Field(description="The card, derived from the stored weights.")
    node_id: NodeId = Field(description="The node whose store holds the weights.")


class ModelCardRemoved(WireModel):
    """A node's store no longer holds an added model; the card is forgotten once no node
    holds it."""

    kind: Literal["ModelCardRemoved"] = "ModelCardRemoved"
    model_id: ModelId = Field(description="The model removed from the store.")
    node_id: NodeId = Field(description="The node whose store held it.")


class TaskCreated(WireModel):
    """The master turned a command into a task on an instance."""

    kind: Literal["TaskCreated"] = "TaskCreated"
    task: Task = Field(description="The new task.")


class TaskStatusUpdated(WireModel):
    """A task moved on: acknowledged, finished, failed or cancelled."""

    kind: Literal["TaskStatusUpdated"] = "TaskStatusUpdated"
    task_id: TaskId = Field(description="The task.")
    status: TaskStatus = Field(description="Its new status.")
    error: str | None = Field(default=None, description="Why it failed, if it did.")


class TaskDeleted(WireModel):
    """The owner of a task is done with it."""

    kind: Literal["TaskDeleted"] = "TaskDeleted"
    task_id: TaskId = Field(description="The task.")


class CommandRejected(WireModel):
    """The master could not act on a command; the owner ends the request with this."""

    kind: Literal["CommandRejected"] = "CommandRejected"
    command_id: CommandId = Field(description="The rejected command.")
    error_kind: ErrorKind = Field(description="Class of the error.")
    message: str = Field(description="What went wrong and what to do about it.")
    retry_after_seconds: int | None = Field(
        default=None, description="With `overloaded`: when a retry may find room.")


class StateSnapshotHydrated(WireModel):
    """Replaces the whole State; starts a new master session or catches a node up."""

    kind: Literal["StateSnapshotHydrated"] = "StateSnapshotHydrated"
    state: State = Field(description="The state to adopt.")


class NodeRevoked(WireModel):
    """A member was expelled; every node refuses its messages from now on."""

    kind: Literal["NodeRevoked"] = "NodeRevoked"
    node_id: NodeId = Field(description="The expelled member.")


class MembershipAgreed(WireModel):
    """The members a majority agreed the cluster has; a side with half or fewer of them
    makes no lasting change."""

    kind: Literal["MembershipAgreed"] = "MembershipAgreed"
    members: list[NodeId] = Field(description="The agreed members.", max_length=4096)


class NodeFailureNoted(WireModel):
    """A runner on the node failed (died, or missed a deadline): placement avoids the node
    until `until` while anything else fits, and it is shown as unhealthy until then."""

    kind: Literal["NodeFailureNoted"] = "NodeFailureNoted"
    node_id: NodeId = Field(description="The node whose runner failed.")
    reason: str = Field(max_length=2048, description="What failed, as the worker said.")
    until: float = Field(description="End of the cool-off, Unix seconds (the master's "
                         "clock).")
    failures: int = Field(default=1, ge=1, description="Failures in a row, this one "
                          "included (the master starts again at 1 once a cool-off ended).")


Event = Annotated[
    InstanceCreated
    | InstanceDeleted
    | RunnerStatusUpdated
    | WeightsFetchProgress
    | WeightsReady
    | ModelCardAdded
    | ModelCardRemoved
    | TaskCreated
    | TaskStatusUpdated
    | TaskDeleted
    | CommandRejected
    | StateSnapshotHydrated
    | NodeRevoked
    | MembershipAgreed
    | NodeFailureNoted,
    Field(discriminator="kind"),
]


class LocalEvent(WireModel):
    """An event a node proposes to the master, not yet indexed."""

    origin: NodeId = Field(description="Node that produced the event.")
    epoch: str = Field(description="Fresh per producer start, so a restart counts anew.")
    origin_seq: int = Field(description="Sequence within (origin, epoch), to drop resends.")
    event: Event = Field(description="The event.")


# At most this many of a node's proposals leave in one message.
MAX_PROPOSALS_TOGETHER = 64


class LocalEventBatch(WireModel):
    """A node's proposals that were ready together, sent under one signature.

    The producer sends what became ready within one turn of its loop (and what is due for
    a resend) as one batch, so a burst costs it one signature and the master one check.
    Every proposal names the batch's origin, which is the node that signed it."""

    origin: NodeId = Field(description="Node that produced and signed the proposals.")
    events: list[LocalEvent] = Field(
        min_length=1, max_length=MAX_PROPOSALS_TOGETHER,
        description="Proposals of this origin, in the order they were made ready.")

    @model_validator(mode="after")
    def _one_origin(self) -> "LocalEventBatch":
        if any(local.origin != self.origin for local in self.events):
            raise ValueError("a batch holds one origin's proposals")
        return self


class IndexedEvent(WireModel):
    """An event the master placed in the one cluster-wide order."""

    index: int = Field(description="Position in the master's log, from 0.")
    session: SessionId = Field(description="Master session that assigned the index.")
    master_node: NodeId = Field(description="Master that assigned the index.")
    event: Event = Field(description="The event.")
    source: EventSource | None = Field(
        default=None, description="The producer of a local event; None for the master's own.")


class IndexedBatch(WireModel):
    """Consecutive indexed events of one master session, published under one signature.

    The master publishes what it indexed together (a command's events, the proposals that
    were ready in one turn, a replay) as one batch, so a burst costs one signature and one
    check per node, not one per event. Every event names the batch's master, which is the
    node that signed it."""

    master_node: NodeId = Field(description="Master that indexed and signed the events.")
    events: list[IndexedEvent] = Field(
        min_length=1, description="Consecutive events of one session, in index order.")

    @model_validator(mode="after")
    def _one_run_of_one_session(self) -> "IndexedBatch":
        first = self.events[0]
        for offset, indexed in enumerate(self.events):
            if indexed.master_node != self.master_node or indexed.session != first.session:
                raise ValueError("a batch holds one master's events of one session")
            if indexed.index != first.index + offset:
                raise ValueError("a batch's indices are consecutive")
        return self
