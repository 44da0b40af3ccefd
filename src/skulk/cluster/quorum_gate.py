"""The API's way to the master under `--quorum majority`: a side of a partition without a
majority of the agreed members refuses a lasting command here, since its master would
index nothing (the client gets the refusal at once instead of a timeout)."""

from skulk.cluster.membership import Membership
from skulk.shared.channels import Sender
from skulk.shared.partition import Quorum, refuse_on_a_strict_minority
from skulk.shared.replica import StateReplica
from skulk.shared.types.commands import Command


class QuorumGate:
    """A `Sender[Command]` in front of the node's commands."""

    def __init__(self, commands: Sender[Command], *, quorum: Quorum, members: Membership,
                 replica: StateReplica) -> None:
        self._commands = commands
        self._quorum = quorum
        self._members = members
        self._replica = replica

    async def send(self, command: Command, /) -> None:
        refuse_on_a_strict_minority(command, self._quorum, self._members.heard(),
                                    self._replica.state.members)
        await self._commands.send(command)
