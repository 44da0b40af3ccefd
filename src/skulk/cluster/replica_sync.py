"""Keeping this node's replica in step with the master: ask for a snapshot when following a
new master, for a replay when an index went missing, and resend local events the master
has not indexed yet."""

import anyio

from skulk.cluster.local_events import LocalEventSender
from skulk.shared.channels import Sender
from skulk.shared.replica import StateReplica
from skulk.shared.types.election import StateSyncMessage
from skulk.shared.types.ids import NodeId
from skulk.shared.views import ElectedMaster

SYNC_INTERVAL_SECONDS = 0.5


class ReplicaSync:
    def __init__(self, *, node_id: NodeId, replica: StateReplica, election: ElectedMaster,
                 requests: Sender[StateSyncMessage]) -> None:
        self._node_id = node_id
        self._replica = replica
        self._election = election
        self._requests = requests
        self._gap_from: int | None = None
        self._caught_up_from: int | None = None

    def catch_up(self) -> None:
        """Ask the master for whatever follows this replica's last index. A follower cut
        off for a while and back under the same master sees no gap until the master
        indexes something new; after every round it asks instead (the master answers
        nothing when there is nothing), unless events arrived meanwhile: then they are
        flowing, a gap among them shows itself, and a replay would only send every node
        again what is on its way to it (at 200 nodes on one core, the rounds a starved
        loop started made each event reach each node twice)."""
        if self._election.master not in (None, self._node_id):
            self._caught_up_from = self._replica.next_index()

    async def run(self, local_events: LocalEventSender) -> None:
        while True:
            await anyio.sleep(SYNC_INTERVAL_SECONDS)
            noted = self._replica.take_gap()
            if noted is not None:
                self._gap_from = noted
            master = self._election.master
            if master is not None and self._replica.master_node != master:
                await self._requests.send(StateSyncMessage(kind="snapshot_request",
                                                           node_id=self._node_id))
            elif self._gap_from is not None:
                gap, self._gap_from = self._gap_from, None
                await self._requests.send(StateSyncMessage(
                    kind="replay_request", node_id=self._node_id,
                    session=self._replica.session, from_index=gap))
            elif self._caught_up_from is not None:
                start, self._caught_up_from = self._caught_up_from, None
                if self._replica.next_index() == start:  # nothing arrived since the round
                    await self._requests.send(StateSyncMessage(
                        kind="replay_request", node_id=self._node_id,
                        session=self._replica.session, from_index=start))
            await local_events.resend_due()
