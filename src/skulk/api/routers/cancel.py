"""`POST /v1/cancel/{command_id}`: stop a running generation."""

from fastapi import APIRouter

from skulk.api.context import Context
from skulk.api.errors import ApiError
from skulk.shared.types.commands import CancelTask
from skulk.shared.types.ids import CommandId, new_command_id

router = APIRouter(tags=["requests"])


@router.post("/v1/cancel/{command_id}",
             summary="Cancel a running generation by the command id its response announced")
async def cancel(command_id: CommandId, context: Context) -> dict[str, str]:
    serving = context.requests.command_aliases.get(command_id, command_id)  # after a failover
    task = context.cluster.replica.state.task_for_command(serving)
    if task is None:
        raise ApiError(404, f"no running request '{command_id}'", code="request_not_found")
    await context.requests.commands.send(CancelTask(command_id=new_command_id(),
                                          target_command_id=serving))
    return {"cancelled": command_id, "task_id": task.task_id}
