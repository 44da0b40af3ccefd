"""Typed messages on a runner's two queues: worker → runner and runner → worker."""

from typing import Annotated, Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.chunks import Chunk
from skulk.shared.types.ids import CommandId, TaskId
from skulk.shared.types.runners import RunnerStatus
from skulk.shared.types.tasks import TerminalTaskStatus, TextGenerationTask
from skulk.shared.types.traces import Span


class LoadModel(WireModel):
    kind: Literal["load_model"] = "load_model"


class WarmUp(WireModel):
    kind: Literal["warm_up"] = "warm_up"


class StartTask(WireModel):
    kind: Literal["start_task"] = "start_task"
    task: TextGenerationTask


class CancelTask(WireModel):
    kind: Literal["cancel_task"] = "cancel_task"
    task_id: TaskId


class Shutdown(WireModel):
    kind: Literal["shutdown"] = "shutdown"


ToRunner = Annotated[LoadModel | WarmUp | StartTask | CancelTask | Shutdown,
                     Field(discriminator="kind")]


class StatusReport(WireModel):
    kind: Literal["status"] = "status"
    status: RunnerStatus


class TaskAcknowledged(WireModel):
    kind: Literal["acknowledged"] = "acknowledged"
    task_id: TaskId


class ChunkProduced(WireModel):
    kind: Literal["chunk"] = "chunk"
    task_id: TaskId
    command_id: CommandId
    chunk: Chunk


class TaskEnded(WireModel):
    kind: Literal["ended"] = "ended"
    task_id: TaskId
    status: TerminalTaskStatus
    error: str | None = None
    spans: list[Span] = Field(default_factory=list)  # the engine's, for a traced task


FromRunner = Annotated[StatusReport | TaskAcknowledged | ChunkProduced | TaskEnded,
                       Field(discriminator="kind")]
