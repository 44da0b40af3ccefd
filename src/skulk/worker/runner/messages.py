"""Typed messages on a runner's two queues: worker → runner and runner → worker.

What the worker asks of its runner ends in `Request` (`LoadModelRequest`), which keeps it
apart from the plan's steps (`worker.plan.LoadModel`) and the cluster's commands
(`commands.CancelTask`) that lead to it.
"""

from collections.abc import Callable
from typing import Annotated, Literal, cast

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.chunks import Chunk
from skulk.shared.types.ids import CommandId, NodeId, TaskId
from skulk.shared.types.runners import RunnerStatus
from skulk.shared.types.tasks import TerminalTaskStatus, TextGenerationTask
from skulk.shared.types.traces import Span
from skulk.worker.runner.built import built
from skulk.worker.runner.message_check import BadFrame, MessageCheck
from skulk.worker.runner.pipe_frames import PlainForm


class LoadModelRequest(WireModel):
    kind: Literal["load_model"] = "load_model"


class WarmUpRequest(WireModel):
    kind: Literal["warm_up"] = "warm_up"


class StartTaskRequest(WireModel):
    kind: Literal["start_task"] = "start_task"
    task: TextGenerationTask
    first_token_ack: bool = False
    """The node will say when the task's first token went out (`FirstTokenOut`): its
    stream is on this node (`first_token_pause`)."""


class CancelTaskRequest(WireModel):
    kind: Literal["cancel_task"] = "cancel_task"
    task_id: TaskId


class FirstTokenOut(WireModel):
    """The task's first token went out to its client: its runner may step on."""

    kind: Literal["first_token_out"] = "first_token_out"
    task_id: TaskId


class ShutdownRequest(WireModel):
    kind: Literal["shutdown"] = "shutdown"


class RevokedNodes(WireModel):
    """The node's revocation list changed: a runner with members-only ggml RPC links
    (`skulk.worker.rpc_channel`) refuses these nodes from now on and ends their open
    links; any other runner has nothing to do."""

    kind: Literal["revoked_nodes"] = "revoked_nodes"
    nodes: list[NodeId]


LifecycleMessage = LoadModelRequest | WarmUpRequest | ShutdownRequest | RevokedNodes
"""What the worker sends through `Supervisor.send` (tasks have calls of their own)."""

ToRunner = Annotated[LoadModelRequest | WarmUpRequest | StartTaskRequest | CancelTaskRequest
                     | FirstTokenOut | ShutdownRequest | RevokedNodes,
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


TokenPiece = tuple[TaskId, CommandId, str, list[int]]
"""One request's plain text and tokens of a step (no log probabilities, not its last)."""


class TokensProduced(WireModel):
    """A step's plain token output for every request that got some, as one message: one
    frame to write and unpickle per step, not one pydantic chunk per request and token.
    It pickles as its pieces alone (a list of tuples: about a third of the pickle and a
    fifth of the time of pydantic's own state), and is rebuilt from them unchecked: the
    pipe's reader checks the message's class, and the runner built the pieces."""

    kind: Literal["tokens"] = "tokens"
    pieces: list[TokenPiece]

    def __reduce__(self) -> tuple[Callable[[list[TokenPiece]], "TokensProduced"],
                                  tuple[list[TokenPiece]]]:
        return tokens_produced, (self.pieces,)


def tokens_produced(pieces: list[TokenPiece]) -> TokensProduced:
    """`TokensProduced` of pieces already checked (the runner's own, or unpickled)."""
    return built(TokensProduced, {"kind": "tokens", "pieces": pieces})


def _tokens_from_values(values: object) -> TokensProduced:
    """What a plain frame of `TokensProduced` carried, as the message: a list of 4-tuples
    (the pieces' own values are the runner's, as unpickled ones were)."""
    if type(values) is list:
        for piece in values:  # a loop, not all(...): this runs once per token
            if type(piece) is not tuple or len(piece) != 4:
                break
        else:
            return tokens_produced(cast(list[TokenPiece], values))
    raise BadFrame(f"a plain frame carried {type(values).__name__} values, not the "
                   "pieces of TokensProduced")


def _token_values(message: "FromRunner") -> list[object]:
    assert isinstance(message, TokensProduced)  # the only class the form is used for
    return cast(list[object], message.pieces)


class TaskEnded(WireModel):
    kind: Literal["ended"] = "ended"
    task_id: TaskId
    status: TerminalTaskStatus
    error: str | None = None
    spans: list[Span] = Field(default_factory=list)  # the engine's, for a traced task


FromRunner = Annotated[StatusReport | TaskAcknowledged | ChunkProduced | TokensProduced
                       | TaskEnded, Field(discriminator="kind")]


TOKENS_PLAIN: PlainForm[FromRunner] = PlainForm(TokensProduced, _token_values,
                                                _tokens_from_values)
"""A step's tokens cross the runner's pipe as plain values (pipe_frames), not pickled."""


TO_RUNNER: MessageCheck[ToRunner] = MessageCheck(ToRunner, "worker → runner")
"""What a runner takes from its inbox is checked with this."""
FROM_RUNNER: MessageCheck[FromRunner] = MessageCheck(FromRunner, "runner → worker")
"""What the supervisor reads from its runner's pipe is checked with this."""
