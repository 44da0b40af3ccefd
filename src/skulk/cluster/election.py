"""Electing the master: every member campaigns, the max of (clock, seniority, commands
seen, node id) wins once the election timeout has passed.

A campaign starts only when membership really changes (bursts are coalesced) or when a
peer campaigns in a newer round; a campaign in flight is never cancelled by churn: a change
during it just schedules the next one. That is what keeps formation from livelocking.
Seniority belongs to the sitting master only (everyone else has 0; a forced master ranks
above all): how many members elected it (of those it saw in the round before), then in
which round. So a sitting master wins
re-election and keeps its session, and when a partition heals the master the bigger side
elected wins, and the majority's history is the one that goes on.

A vote is dropped (and counted) only when it cannot be true from any honest node: its
round or count is out of the wire's range, or its seniority is neither 0, the forced mark,
nor a voter count within the wire's limit from a round no later than the vote's. It is never
judged against this node's view of the cluster now: a master elected by three members keeps
that seniority after one of them leaves (the receiver then counts two), and a vote that
arrives before its sender's liveliness token is kept (membership is checked when the round
is decided, so a vote alone still does not make its sender a member).
"""

import math
from collections import Counter
from collections.abc import AsyncIterable, Callable, Iterable, Set

import anyio
from loguru import logger

from skulk.shared.channels import Sender
from skulk.shared.types.election import ElectionMessage
from skulk.shared.types.ids import NodeId

DEFAULT_ELECTION_TIMEOUT_SECONDS = 1.0
DEFAULT_COALESCE_SECONDS = 0.1
# Seniority packs (voters << 40) + round: rounds stay under 2**40, voters under 2**12, so
# every seniority is under the forced mark and every value stays an exact wire integer.
ROUND_BITS = 40
MAX_ROUND = (1 << ROUND_BITS) - 1
MAX_VOTERS = (1 << 12) - 1
FORCED_SENIORITY = 1 << 52
# The largest integer every JSON reader keeps exact: no honest count comes near it.
MAX_COUNT = (1 << 53) - 1


def seniority_for(voters: int, round_: int) -> int:
    return (min(voters, MAX_VOTERS) << ROUND_BITS) + round_


def implausible(vote: ElectionMessage) -> str | None:
    """Why `vote` cannot have come from an honest node, or None.

    Only what no honest node can send is refused: the receiver's view of membership is not
    a bound (a seniority earned when the cluster was larger stays true after members leave).
    """
    if not 0 <= vote.clock <= MAX_ROUND:
        return "round_out_of_range"
    if not 0 <= vote.commands_seen <= MAX_COUNT:
        return "count_out_of_range"
    if vote.seniority in (0, FORCED_SENIORITY):
        return None
    voters, round_ = vote.seniority >> ROUND_BITS, vote.seniority & MAX_ROUND
    if vote.seniority < 0 or not 1 <= voters <= MAX_VOTERS:
        return "seniority_out_of_range"
    if round_ > vote.clock:
        return "seniority_from_a_later_round"
    return None


def rank(message: ElectionMessage) -> tuple[int, int, int, str]:
    return (message.clock, message.seniority, message.commands_seen, message.node_id)


def winner(votes: Iterable[ElectionMessage], members: Set[NodeId]) -> NodeId | None:
    """The winning member among the votes of one round."""
    eligible = [vote for vote in votes if vote.node_id in members]
    return max(eligible, key=rank).node_id if eligible else None


class Election:
    """One node's side of the election: sends its votes on `votes` and each round's result
    on `results`."""

    def __init__(
        self,
        *,
        node_id: NodeId,
        votes: Sender[ElectionMessage],
        results: Sender[NodeId],
        commands_seen: Callable[[], int],
        force_master: bool = False,
        timeout: float = DEFAULT_ELECTION_TIMEOUT_SECONDS,
        coalesce: float = DEFAULT_COALESCE_SECONDS,
        on_rejected: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self.node_id = node_id
        self._votes_out = votes
        self._results = results
        self._commands_seen = commands_seen
        self._forced = force_master
        self._timeout = timeout
        self._coalesce = coalesce
        self.members: set[NodeId] = {node_id}
        self.clock = 0
        self.seniority = FORCED_SENIORITY if force_master else 0
        self.master: NodeId | None = None
        # The members whose votes the last round was decided with: the nodes this one can
        # really hear. Liveliness can show a member for a lease after a partition cut it
        # off; a side judges its majority by these, not by tokens.
        self.heard: frozenset[NodeId] = frozenset({node_id})
        self.campaigns = 0
        self.rejected: Counter[str] = Counter()
        self._on_rejected = on_rejected
        self._votes: dict[NodeId, ElectionMessage] = {}
        self._decided_clock = 0
        # The members seen when the last round was decided: only their votes count toward
        # a re-elected master's seniority, so votes that cross a healing partition in the
        # middle of a round cannot lift a minority's master to the majority's.
        self._decided_members: set[NodeId] | None = None
        self._campaigning = False
        self._wanted = anyio.Event()

    async def run(self, membership: AsyncIterable[tuple[NodeId, bool]],
                  messages: AsyncIterable[ElectionMessage]) -> None:
        self.request_campaign("start")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._follow_membership, membership)
            tasks.start_soon(self._follow_messages, messages)
            await self._campaign_loop()

    def request_campaign(self, why: str) -> None:
        if not self._wanted.is_set():
            logger.debug("election wanted: {}", why)
        self._wanted.set()

    def membership_changed(self, node: NodeId, alive: bool) -> None:
        logger.debug("membership: {} {}", node, "alive" if alive else "gone")
        before = set(self.members)
        if alive:
            self.members.add(node)
        elif node != self.node_id:
            self.members.discard(node)
        if self.members != before:
            self.request_campaign(f"{node} {'joined' if alive else 'left'}")

    async def _follow_membership(self, membership: AsyncIterable[tuple[NodeId, bool]]) -> None:
        async for node, alive in membership:
            self.membership_changed(node, alive)

    def _my_vote(self) -> ElectionMessage:
        return ElectionMessage(node_id=self.node_id, clock=self.clock,
                               seniority=self.seniority, commands_seen=self._commands_seen())

    async def _follow_messages(self, messages: AsyncIterable[ElectionMessage]) -> None:
        async for message in messages:
            await self.receive(message)

    async def receive(self, message: ElectionMessage) -> None:
        if message.node_id == self.node_id:
            return
        problem = implausible(message)
        if problem is not None:
            self.rejected[problem] += 1
            self._on_rejected(problem)
            return
        if message.clock > self.clock:
            # A newer round: join it (this is not churn, so it may replace ours).
            self.clock = message.clock
            self._votes = {message.node_id: message}
            self.request_campaign(f"{message.node_id} campaigns in round {message.clock}")
            if self._campaigning:
                self._votes[self.node_id] = self._my_vote()
                await self._votes_out.send(self._votes[self.node_id])
        elif message.clock == self.clock:
            late = not self._campaigning and message.node_id not in self._votes
            self._votes[message.node_id] = message
            if late:
                # This round was decided without that vote: decide again, all together.
                self.request_campaign(f"{message.node_id} voted late in round {self.clock}")
        elif not self._campaigning:
            # A peer is behind: campaign so it sees our round and catches up.
            self.request_campaign(f"{message.node_id} is behind (round {message.clock})")

    async def _campaign_loop(self) -> None:
        while True:
            await self._wanted.wait()
            await anyio.sleep(self._coalesce)  # a burst of changes becomes one campaign
            self._wanted = anyio.Event()
            await self._campaign()

    async def _campaign(self) -> None:
        self._campaigning = True
        self.campaigns += 1
        try:
            # A round someone else opened and we have not voted in yet: join it.
            joining = self.clock > self._decided_clock
            if not joining:
                self.clock = min(self.clock + 1, MAX_ROUND)
                self._votes = {}
            logger.info("election round {} started ({} member(s))", self.clock,
                        len(self.members))
            self._votes[self.node_id] = self._my_vote()
            await self._votes_out.send(self._votes[self.node_id])
            round_started = self.clock
            with anyio.move_on_after(self._timeout):
                await anyio.sleep(math.inf)
            if self.clock != round_started:
                return  # a newer round took over; its own campaign decides
            self._decided_clock = self.clock
            counted = set(self._votes) & self.members
            self.heard = frozenset(counted | {self.node_id})
            if self._decided_members is not None:
                counted &= self._decided_members
            self._decided_members = set(self.members)
            # Only members count: a vote alone does not make its sender one.
            chosen = (self.node_id if self._forced
                      else winner(self._votes.values(), self.members))
        finally:
            self._campaigning = False
        if chosen is None:
            return
        if not self._forced:
            voters = len(counted)
            self.seniority = (seniority_for(voters, self.clock) if chosen == self.node_id
                              else 0)
        changed = chosen != self.master
        self.master = chosen
        ballot = ", ".join(f"{v.node_id}:{v.seniority}/{v.commands_seen}"
                           for v in self._votes.values())
        logger.info("election round {} finished: master is {}{} (votes {})", self.clock,
                    chosen, "" if changed else " (unchanged)", ballot)
        await self._results.send(chosen)
