"""Control-plane failures end the streams they concern: a rejected command at once, a
failed or cancelled task after a short grace, because the task's own error chunk travels
the data plane, usually arrives first and says more; a node that leaves the cluster ends
every stream it was serving at once."""

import anyio
from anyio.abc import TaskGroup

from skulk.api.streams import StreamRegistry
from skulk.shared.types.chunks import ErrorChunk, ErrorKind
from skulk.shared.types.events import CommandRejected, Event, TaskStatusUpdated
from skulk.shared.types.ids import CommandId, NodeId
from skulk.shared.types.state import State

FAILURE_GRACE_SECONDS = 0.5


def end_failed_streams(event: Event, state: State, streams: StreamRegistry,
                       tasks: TaskGroup) -> None:
    """End the open stream `event` (just applied to `state`) reports as failed, if any."""
    if isinstance(event, CommandRejected):
        streams.fail(event.command_id, ErrorChunk(
            error_kind=event.error_kind, message=event.message,
            retry_after_seconds=event.retry_after_seconds))
    elif isinstance(event, TaskStatusUpdated) and event.status in ("failed", "cancelled"):
        task = state.tasks.get(event.task_id)
        if task is not None and streams.is_open(task.command_id):
            kind: ErrorKind = "runner_failed" if event.status == "failed" else "cancelled"
            error = ErrorChunk(error_kind=kind,
                               message=event.error or f"the request was {event.status}")
            tasks.start_soon(_fail_later, streams, task.command_id, error)


async def _fail_later(streams: StreamRegistry, command_id: CommandId,
                      error: ErrorChunk) -> None:
    await anyio.sleep(FAILURE_GRACE_SECONDS)
    streams.fail(command_id, error)


def fail_streams_served_by(lost: NodeId, state: State, streams: StreamRegistry) -> None:
    """A node died: end at once every open stream whose instance had a shard there."""
    for task in state.tasks.values():
        instance = state.instances.get(task.instance_id)
        if instance is None or not streams.is_open(task.command_id):
            continue
        if any(shard.node_id == lost for shard in instance.shards.values()):
            streams.fail(task.command_id, ErrorChunk(
                error_kind="runner_failed",
                message=f"node {lost}, which was serving this request, left the cluster; "
                        "retry the request"))
