"""Changes a minority side accepted, sent again to the majority's master at heal.

When a master steps down because the partition healed and the bigger side's master won,
the lasting commands it accepted while its side lacked a majority are resent once this
node follows the new master's session. Commands are idempotent by their effect (placing
an instance id that exists, deleting one that is gone, revoking a revoked node change
nothing), so a command both sides saw is harmless.
"""

from loguru import logger

from skulk.shared.channels import Sender
from skulk.shared.replica import StateReplica
from skulk.shared.types.commands import Command
from skulk.shared.types.ids import NodeId

FOLLOW_TIMEOUT_SECONDS = 120.0


async def send_when_following_another(commands: list[Command], replica: StateReplica,
                                      node_id: NodeId, send: Sender[Command]) -> None:
    followed = await replica.wait_for(
        lambda state: replica.master_node not in (None, node_id), FOLLOW_TIMEOUT_SECONDS)
    if followed is None:
        return  # this node leads again: what it accepted is in its own session
    logger.info("carrying {} change(s) made on a minority side over to master {}",
                len(commands), replica.master_node)
    for command in commands:
        await send.send(command)
