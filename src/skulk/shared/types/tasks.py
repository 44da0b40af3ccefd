"""Tasks: what a runner is asked to do, created by the master from a command."""

from typing import Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId, TaskId

Role = Literal["system", "user", "assistant", "tool"]
TaskStatus = Literal["pending", "running", "complete", "failed", "cancelled"]
TERMINAL_TASK_STATUSES: frozenset[TaskStatus] = frozenset(
    {"complete", "failed", "cancelled"}
)


class ChatMessage(WireModel):
    """One turn of a conversation, already reduced to plain text."""

    role: Role = Field(description="Who said it.")
    content: str = Field(description="What was said.")


class GenerationParams(WireModel):
    """Engine-neutral parameters of one text generation, parsed at the API edge."""

    model_id: ModelId = Field(description="Model asked for, canonical id.")
    messages: list[ChatMessage] = Field(description="The conversation so far.")
    max_tokens: int | None = Field(
        default=None, description="Most tokens to generate; None means the default."
    )
    temperature: float = Field(default=1.0, description="Sampling temperature; 0 is greedy.")
    top_p: float = Field(default=1.0, description="Nucleus sampling mass.")
    seed: int | None = Field(default=None, description="Sampler seed.")
    stop: list[str] = Field(default_factory=list, description="Stop sequences.")


class TextGenerationTask(WireModel):
    """A generation assigned to an instance."""

    kind: Literal["text_generation"] = "text_generation"
    task_id: TaskId = Field(description="Id of this task.")
    command_id: CommandId = Field(description="Command that created it.")
    instance_id: InstanceId = Field(description="Instance that serves it.")
    owner_node: NodeId = Field(description="API node that streams its output.")
    params: GenerationParams = Field(description="What to generate.")
    status: TaskStatus = Field(default="pending", description="Where the task is.")
    error: str | None = Field(default=None, description="Why it failed, if it did.")


Task = TextGenerationTask
