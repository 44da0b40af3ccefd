"""Sending a command again until the replicated State shows the master acted on it.

Commands sent while no master listens (an election in progress) are lost; the master drops
the duplicates a resend makes.
"""

from collections.abc import Callable

import anyio

from skulk.api.context import ApiContext
from skulk.shared.types.commands import Command
from skulk.shared.types.state import State

COMMAND_RESEND_SECONDS = 2.0


async def resend_until(context: ApiContext, command: Command,
                       acknowledged: Callable[[State], bool]) -> None:
    """Resend a sent command every `COMMAND_RESEND_SECONDS` until `acknowledged(state)`."""
    while True:
        await anyio.sleep(COMMAND_RESEND_SECONDS)
        if acknowledged(context.cluster.replica.state):
            return
        await context.requests.commands.send(command)
