"""The cluster State every node derives by applying the same indexed events."""

from collections.abc import Mapping

from pydantic import Field, PrivateAttr

from skulk.shared.types.base import WireModel
from skulk.shared.types.event_source import EventSource
from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId, RunnerId, TaskId
from skulk.shared.types.instances import Instance
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.runners import RunnerStatus
from skulk.shared.types.tasks import Task
from skulk.shared.types.tasks_by_command import TasksByCommand


class NodeCoolOff(WireModel):
    """Why placement avoids a node for now: its runners failed."""

    reason: str = Field(description="The last failure, as the worker said.")
    until: float = Field(description="End of the cool-off, Unix seconds.")
    failures: int = Field(default=1, description="Failures noted since the node was last "
                          "healthy (a node with two or more is shown unhealthy).")


class State(WireModel):
    """Replicated cluster state; replaced whole by `apply`, never mutated."""

    instances: Mapping[InstanceId, Instance] = Field(
        default_factory=dict, description="Placed instances by id."
    )
    runners: Mapping[RunnerId, RunnerStatus] = Field(
        default_factory=dict, description="Last reported status of each runner."
    )
    tasks: Mapping[TaskId, Task] = Field(
        default_factory=dict, description="Tasks not yet finished by their owner."
    )
    producer_marks: Mapping[NodeId, EventSource] = Field(
        default_factory=dict,
        description="Per producing node, its newest indexed local event: producers stop "
        "resending what is at or below it, and a new master drops resends below it.")
    members: list[NodeId] = Field(
        default_factory=list, description="The membership last agreed by a majority "
        "(empty in a new cluster).")
    revoked_nodes: list[NodeId] = Field(
        default_factory=list, description="Expelled members, whose messages and "
        "certificates every node refuses.")
    model_cards: Mapping[ModelId, ModelCard] = Field(
        default_factory=dict, description="Cards of models added to a node's store (not "
        "built in), announced by that node so every node can list and place them.")
    model_card_holders: Mapping[ModelId, list[NodeId]] = Field(
        default_factory=dict, description="Per announced card, the nodes whose store holds "
        "its weights; a card no node holds any more is forgotten.")
    node_cool_offs: Mapping[NodeId, NodeCoolOff] = Field(
        default_factory=dict, description="Nodes whose runners failed lately, which "
        "placement avoids until the cool-off ends (while anything else fits).")
    last_event_applied_idx: int = Field(
        default=-1, description="Index of the last applied event; -1 before any."
    )
    # Derived from `tasks` on first use; never serialized (copies of a State share it).
    _tasks_by_command: TasksByCommand = PrivateAttr(default_factory=TasksByCommand)

    def cooling_nodes(self, now: float) -> frozenset[NodeId]:
        """Nodes still in their cool-off at `now` (Unix seconds)."""
        return frozenset(n for n, c in self.node_cool_offs.items() if c.until > now)

    def instances_of(self, model_id: ModelId) -> list[Instance]:
        return [i for i in self.instances.values() if i.model_id == model_id]

    def task_for_command(self, command_id: CommandId) -> Task | None:
        return self._tasks_by_command.task(self.tasks, command_id)
