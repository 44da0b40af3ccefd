"""N elections wired through an in-process broadcast, with membership driven by the test."""

import math
from collections import Counter

import anyio
import pytest
from anyio.streams.memory import MemoryObjectSendStream

from skulk.cluster.election import (
    FORCED_SENIORITY,
    MAX_COUNT,
    MAX_ROUND,
    MAX_VOTERS,
    ROUND_BITS,
    Election,
    implausible,
    seniority_for,
    winner,
)
from skulk.shared.types.election import ElectionMessage
from skulk.shared.types.ids import NodeId
from skulk.testing.channels import SendThrough


def vote(node: str, clock: int = 1, seniority: int = 0, seen: int = 0) -> ElectionMessage:
    return ElectionMessage(node_id=NodeId(node), clock=clock, seniority=seniority,
                           commands_seen=seen)


def test_winner_is_the_max_among_members() -> None:
    votes = [vote("a", seniority=3), vote("b", seen=100), vote("c", seniority=9)]
    assert winner(votes, {NodeId("a"), NodeId("b"), NodeId("c")}) == "c"
    assert winner(votes, {NodeId("a"), NodeId("b")}) == "a"
    assert winner([vote("a"), vote("b")], {NodeId("a"), NodeId("b")}) == "b"
    assert winner(votes, set()) is None


class Harness:
    def __init__(self) -> None:
        self.inboxes: dict[NodeId, MemoryObjectSendStream[ElectionMessage]] = {}
        self.members: dict[NodeId, MemoryObjectSendStream[tuple[NodeId, bool]]] = {}
        self.elections: dict[NodeId, Election] = {}
        self.results: dict[NodeId, list[NodeId]] = {}
        self.cut_off: set[NodeId] = set()

    def reachable(self, sender: NodeId, receiver: NodeId) -> bool:
        return sender == receiver or (sender in self.cut_off) == (receiver in self.cut_off)

    async def start(self, tasks: anyio.abc.TaskGroup, name: str, force: bool = False) -> None:
        node = NodeId(name)
        inbox_send, inbox = anyio.create_memory_object_stream[ElectionMessage](math.inf)
        members_send, members = anyio.create_memory_object_stream[tuple[NodeId, bool]](
            math.inf)
        self.inboxes[node], self.members[node] = inbox_send, members_send
        self.results[node] = []

        async def publish(message: ElectionMessage) -> None:
            for receiver, send in self.inboxes.items():
                if self.reachable(node, receiver):
                    send.send_nowait(message)

        async def on_result(master: NodeId) -> None:
            self.results[node].append(master)

        election = Election(node_id=node, votes=SendThrough(publish),
                            results=SendThrough(on_result),
                            commands_seen=lambda: 0, force_master=force, timeout=0.2,
                            coalesce=0.02)
        self.elections[node] = election
        for other in list(self.members):
            self.members[other].send_nowait((node, True))
            members_send.send_nowait((other, True))
        tasks.start_soon(election.run, members, inbox)

    def kill(self, name: str) -> None:
        node = NodeId(name)
        del self.inboxes[node]
        del self.members[node]
        for send in self.members.values():
            send.send_nowait((node, False))

    def masters(self) -> set[NodeId | None]:
        return {self.elections[n].master for n in self.inboxes}

    async def converged(self, timeout: float = 5.0) -> NodeId:
        await anyio.sleep(0.1)  # let pending membership changes reach the elections
        with anyio.fail_after(timeout):
            while True:
                masters = self.masters()
                if len(masters) == 1 and None not in masters:
                    busy = any(e._campaigning or e._wanted.is_set()
                               for n, e in self.elections.items() if n in self.inboxes)
                    if not busy:
                        master = masters.pop()
                        assert master is not None
                        return master
                await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_simultaneous_start_converges_to_one_master() -> None:
    harness = Harness()
    async with anyio.create_task_group() as tasks:
        for name in ("a", "b", "c"):
            await harness.start(tasks, name)
        assert await harness.converged() == "c"
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_joiner_does_not_unseat_the_master_and_churn_starts_nothing() -> None:
    harness = Harness()
    async with anyio.create_task_group() as tasks:
        await harness.start(tasks, "a")
        await harness.start(tasks, "b")
        assert await harness.converged() == "b"
        await harness.start(tasks, "z")  # the highest id, but no seniority
        assert await harness.converged() == "b"
        campaigns = {n: e.campaigns for n, e in harness.elections.items()}
        for _ in range(20):  # a peer seen again and again is no membership change
            harness.members[NodeId("a")].send_nowait((NodeId("b"), True))
        await anyio.sleep(0.5)
        assert {n: e.campaigns for n, e in harness.elections.items()} == campaigns
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_killing_the_master_elects_another_and_forcing_wins() -> None:
    harness = Harness()
    async with anyio.create_task_group() as tasks:
        await harness.start(tasks, "a", force=True)
        await harness.start(tasks, "b")
        await harness.start(tasks, "c")
        assert await harness.converged() == "a"
        assert harness.elections[NodeId("a")].seniority >= FORCED_SENIORITY
        harness.kill("a")
        assert await harness.converged() == "c"
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_burst_of_membership_churn_still_converges() -> None:
    harness = Harness()
    async with anyio.create_task_group() as tasks:
        for name in ("a", "b", "c", "d"):
            await harness.start(tasks, name)
        for _ in range(5):
            for send in harness.members.values():
                send.send_nowait((NodeId("ghost"), True))
                send.send_nowait((NodeId("ghost"), False))
        assert await harness.converged() == "d"
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_after_a_partition_the_bigger_side_keeps_its_master() -> None:
    harness = Harness()
    async with anyio.create_task_group() as tasks:
        for name in ("a", "b", "c"):
            await harness.start(tasks, name)
        assert await harness.converged() == "c"
        # "c" is cut off: it stays master of itself, "a" and "b" elect "b".
        harness.cut_off = {NodeId("c")}
        for other in ("a", "b"):
            harness.members[NodeId("c")].send_nowait((NodeId(other), False))
            harness.members[NodeId(other)].send_nowait((NodeId("c"), False))
        a, c = harness.elections[NodeId("a")], harness.elections[NodeId("c")]
        with anyio.fail_after(5):
            while a.master != "b":
                await anyio.sleep(0.05)
        b = harness.elections[NodeId("b")]
        with anyio.fail_after(5):
            while c._campaigning or c._wanted.is_set() or c.seniority >> ROUND_BITS != 1:
                await anyio.sleep(0.05)
        assert b.seniority > c.seniority  # elected by two voters against one
        harness.cut_off = set()
        for other in ("a", "b"):
            harness.members[NodeId("c")].send_nowait((NodeId(other), True))
            harness.members[NodeId(other)].send_nowait((NodeId("c"), True))
        assert await harness.converged() == "b"
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_member_leaving_keeps_one_master() -> None:
    """The master was elected by three; once a follower leaves, the survivor counts two
    members and must still take the master's vote (it once dropped it and elected itself)."""
    harness = Harness()
    async with anyio.create_task_group() as tasks:
        for name in ("a", "b", "c"):
            await harness.start(tasks, name)
        assert await harness.converged() == "c"
        assert harness.elections[NodeId("c")].seniority >> ROUND_BITS == 3
        harness.kill("b")
        assert await harness.converged() == "c"
        assert harness.elections[NodeId("a")].rejected == Counter()
        tasks.cancel_scope.cancel()


def test_only_votes_no_honest_node_could_send_are_implausible() -> None:
    # A seniority earned by more voters than the receiver now sees is still true.
    assert implausible(vote("a", clock=3, seniority=seniority_for(3, 3))) is None
    assert implausible(vote("a", clock=9, seniority=seniority_for(MAX_VOTERS, 9))) is None
    assert implausible(vote("a", seniority=FORCED_SENIORITY)) is None
    assert implausible(vote("a", seen=MAX_COUNT)) is None
    assert implausible(vote("a", clock=3, seniority=FORCED_SENIORITY + 1)) == \
        "seniority_out_of_range"
    assert implausible(vote("a", clock=3, seniority=-5)) == "seniority_out_of_range"
    assert implausible(vote("a", clock=3, seniority=3)) == "seniority_out_of_range"
    assert implausible(vote("a", clock=3, seniority=seniority_for(1, 4))) == \
        "seniority_from_a_later_round"
    assert implausible(vote("a", clock=MAX_ROUND + 1)) == "round_out_of_range"
    assert implausible(vote("a", seen=-1)) == "count_out_of_range"
    assert implausible(vote("a", seen=MAX_COUNT + 1)) == "count_out_of_range"


@pytest.mark.anyio
async def test_a_vote_before_its_senders_token_counts_once_it_is_a_member() -> None:
    rejected: list[str] = []
    published: list[ElectionMessage] = []
    results: list[NodeId] = []

    async def publish(message: ElectionMessage) -> None:
        published.append(message)

    async def on_result(master: NodeId) -> None:
        results.append(master)

    election = Election(node_id=NodeId("a"), votes=SendThrough(publish),
                        results=SendThrough(on_result),
                        commands_seen=lambda: 0, on_rejected=rejected.append, timeout=0.05,
                        coalesce=0.01)
    await election.receive(vote("b", clock=2, seniority=FORCED_SENIORITY + 1))
    assert election.clock == 0 and rejected == ["seniority_out_of_range"]
    # The liveliness token of "z" has not arrived yet: its vote is kept, not dropped.
    await election.receive(vote("z", clock=1))
    assert election.clock == 1 and rejected == ["seniority_out_of_range"]
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(election._campaign)
        await anyio.sleep(0.1)
        # Decided before "z" was a member: kept, but neither a candidate nor a voter.
        assert results == ["a"] and NodeId("z") in election._votes
        assert election.seniority >> ROUND_BITS == 1
        election.membership_changed(NodeId("z"), True)
        for round_ in (2, 3):
            tasks.start_soon(election._campaign)
            await election.receive(vote("z", clock=round_))
            await anyio.sleep(0.1)
        assert results == ["a", "a", "a"]  # the sitting master stays
        assert election.seniority >> ROUND_BITS == 2  # and "z" counted among its voters
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_round_remembers_whom_it_heard_from() -> None:
    """Members by token that send no vote (cut off, their tokens not yet expired) are not
    among those heard."""
    async def publish(message: ElectionMessage) -> None:
        pass

    async def on_result(master: NodeId) -> None:
        pass

    election = Election(node_id=NodeId("a"), votes=SendThrough(publish),
                        results=SendThrough(on_result),
                        commands_seen=lambda: 0, timeout=0.05, coalesce=0.01)
    for member in ("b", "c"):
        election.membership_changed(NodeId(member), True)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(election._campaign)
        await election.receive(vote("b", clock=1))
        await anyio.sleep(0.1)
        tasks.cancel_scope.cancel()
    assert election.heard == {"a", "b"}
