"""Membership from liveliness changes: live, seen, departures sent on, revoked members
kept out, and an expelled member gone from the election's members too."""

from collections.abc import AsyncIterator

import pytest

from skulk.cluster.election import Election
from skulk.cluster.membership import Membership
from skulk.shared.replica import StateReplica
from skulk.shared.types.election import ElectionMessage
from skulk.shared.types.ids import NodeId, SessionId
from skulk.shared.types.state import State
from skulk.testing.channels import Collected

A, B, C = NodeId("node-a"), NodeId("node-b"), NodeId("node-c")


async def _ignore(item: object) -> None:
    pass


def election() -> Election:
    async def publish(message: ElectionMessage) -> None:
        pass

    return Election(node_id=A, votes=Collected(), results=Collected(), commands_seen=lambda: 0)


async def changes(*items: tuple[NodeId, bool]) -> AsyncIterator[tuple[NodeId, bool]]:
    for item in items:
        yield item


@pytest.mark.anyio
async def test_changes_update_the_sets_pass_on_and_send_departures() -> None:
    members = Membership(A, election())
    replica = StateReplica()
    replica.restore(State(revoked_nodes=[C]), SessionId("s"), A)
    departures: Collected[NodeId] = Collected()
    passed = [change async for change in members.follow(
        changes((B, True), (C, True), (B, False), (A, False)), replica=replica,
        departures=departures)]
    assert passed == [(B, True), (B, False), (A, False)], "a revoked member is not passed on"
    assert members.live == {A} and members.seen == {B}
    assert departures.items == [B], "this node never departs from itself"


def test_an_expelled_member_leaves_the_live_set_and_the_election() -> None:
    chosen = election()
    members = Membership(A, chosen)
    members.live.add(B)
    chosen.membership_changed(B, True)
    members.expel(B)
    assert members.live == {A} and B not in chosen.members
    members.expel(A)
    assert members.live == {A}, "a node does not expel itself"
    assert members.heard() == {A}, "before any round, only this node was heard"
