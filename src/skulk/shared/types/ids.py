"""One type per id, so a `TaskId` can never be passed where a `RunnerId` is meant."""

import uuid
from typing import NewType

NodeId = NewType("NodeId", str)
InstanceId = NewType("InstanceId", str)
RunnerId = NewType("RunnerId", str)
TaskId = NewType("TaskId", str)
CommandId = NewType("CommandId", str)
ModelId = NewType("ModelId", str)
SessionId = NewType("SessionId", str)  # a master's session of the event log
# An API session (a conversation) whose KV cache its runner keeps between turns.
ConversationId = NewType("ConversationId", str)


def _fresh() -> str:
    return uuid.uuid4().hex


def new_instance_id() -> InstanceId:
    return InstanceId(f"inst-{_fresh()[:12]}")


def new_runner_id() -> RunnerId:
    return RunnerId(f"run-{_fresh()[:12]}")


def new_task_id() -> TaskId:
    return TaskId(f"task-{_fresh()[:12]}")


def new_command_id() -> CommandId:
    return CommandId(f"cmd-{_fresh()}")


def new_session_id() -> SessionId:
    return SessionId(f"sess-{_fresh()[:12]}")
