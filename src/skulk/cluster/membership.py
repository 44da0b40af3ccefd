"""Whom this node counts as members: live by their liveliness tokens now, ever seen since
it started, and, among the live, those its last election round heard from (a token can
outlive a cut link by Zenoh's lease; a side judges its majority by whom it heard)."""

from collections.abc import AsyncIterator, Callable, Collection

from skulk.cluster.election import Election
from skulk.shared.types.ids import NodeId


class Membership:
    def __init__(self) -> None:
        self.live: set[NodeId] = set()
        self.seen: set[NodeId] = set()  # every member seen alive since start

    async def follow(self, changes: AsyncIterator[tuple[NodeId, bool]], *, own: NodeId,
                     revoked: Callable[[], Collection[NodeId]],
                     on_gone: Callable[[NodeId], None]) -> AsyncIterator[tuple[NodeId, bool]]:
        """Keep the sets up to date from liveliness changes, passing each on (to the
        election); an expelled member's token does not make it one again."""
        async for node, alive in changes:
            if node in revoked():
                continue
            if alive:
                self.live.add(node)
                self.seen.add(node)
            elif node != own:
                self.live.discard(node)
                on_gone(node)
            yield node, alive

    def expel(self, node: NodeId, own: NodeId) -> bool:
        """Drop a revoked member at once; whether it was live."""
        if node not in self.live or node == own:
            return False
        self.live.discard(node)
        return True

    def heard(self, election: Election | None) -> set[NodeId]:
        """Live members the last election round heard from."""
        return self.live if election is None else self.live & election.heard
