"""Whom this node counts as members: live by their liveliness tokens now, ever seen since
it started, and, among the live, those its last election round heard from (a token can
outlive a cut link by Zenoh's lease; a side judges its majority by whom it heard)."""

from collections.abc import AsyncIterator

from skulk.cluster.election import Election
from skulk.shared.channels import Sender
from skulk.shared.replica import StateReplica
from skulk.shared.types.ids import NodeId


class Membership:
    def __init__(self, own: NodeId, election: Election) -> None:
        self._own = own
        self._election = election
        self.live: set[NodeId] = {own}
        self.seen: set[NodeId] = set()  # every member seen alive since start

    async def follow(self, changes: AsyncIterator[tuple[NodeId, bool]], *,
                     replica: StateReplica, departures: Sender[NodeId]
                     ) -> AsyncIterator[tuple[NodeId, bool]]:
        """Keep the sets up to date from liveliness changes, passing each on (to the
        election) and sending each member that left on `departures`; a revoked member's
        token does not make it one again."""
        async for node, alive in changes:
            if node in replica.state.revoked_nodes:
                continue
            if alive:
                self.live.add(node)
                self.seen.add(node)
            elif node != self._own:
                self.live.discard(node)
                await departures.send(node)
            yield node, alive

    def expel(self, node: NodeId) -> None:
        """A revoked member leaves membership at once, and the election hears of it."""
        if node in self.live and node != self._own:
            self.live.discard(node)
            self._election.membership_changed(node, False)

    def heard(self) -> set[NodeId]:
        """Live members the last election round heard from."""
        return self.live & self._election.heard
