"""`--serve MODEL`: once the node follows a master, place each named model that has no
instance yet, pinned (idle instances of it are never removed)."""

from skulk.shared.channels import Sender
from skulk.shared.replica import StateReplica
from skulk.shared.types.commands import Command, PlaceInstance
from skulk.shared.types.ids import ModelId, new_command_id, new_instance_id

FOLLOW_TIMEOUT_SECONDS = 60.0


async def place_served_models(models: list[str], replica: StateReplica,
                              commands: Sender[Command]) -> None:
    await replica.wait_for(lambda state: replica.session is not None, FOLLOW_TIMEOUT_SECONDS)
    for model in models:
        if not replica.state.instances_of(ModelId(model)):
            await commands.send(PlaceInstance(
                command_id=new_command_id(), instance_id=new_instance_id(),
                model_id=ModelId(model), pinned=True))
