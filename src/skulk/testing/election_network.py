"""Real `Election`s of N nodes on a simulated network, on virtual time, under one seed.

The network behaves as Zenoh over TCP does between members: what one node sends another
arrives in order, after a delay, possibly twice (a duplicate is harmless and costs nothing
to test), and not at all once the link between them is cut; liveliness (membership) is a
channel of its own, so a vote may arrive before its sender's token or after its departure.
A node is killed (its task cancelled, what it had sent still in flight) and restarted with
the same id and a fresh election state, as a process restarted after `kill -9` would be.
Every delay is drawn from one seeded `random.Random`, so a run replays exactly.
"""

import asyncio
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from skulk.cluster.election import Election
from skulk.shared.types.election import ElectionMessage
from skulk.shared.types.ids import NodeId
from skulk.testing.channels import SendThrough
from skulk.testing.virtual_clock import VirtualClockLoop

_TICK = 1e-6


@dataclass(frozen=True)
class Faults:
    """How unkind the network is; delays are drawn uniformly up to each bound."""

    max_message_delay: float = 0.05
    max_membership_delay: float = 0.3  # a token seen late, a departure noticed late
    duplicate_probability: float = 0.0


@dataclass
class SimNode:
    node_id: NodeId
    election: Election
    task: asyncio.Task[None]
    inbox: MemoryObjectSendStream[ElectionMessage]
    membership: MemoryObjectSendStream[tuple[NodeId, bool]]
    forced: bool
    masters: list[NodeId] = field(default_factory=list)  # every result it reported


class ElectionNetwork:
    def __init__(self, *, seed: int, faults: Faults = Faults(), timeout: float = 1.0,
                 coalesce: float = 0.1) -> None:
        self.loop = VirtualClockLoop()
        self.random = random.Random(seed)
        self.faults = faults
        self.timeout = timeout
        self.coalesce = coalesce
        self.live: dict[NodeId, SimNode] = {}
        self.side: dict[NodeId, int] = {}  # partition side of every node ever started
        self._link_epoch: dict[tuple[NodeId, NodeId], int] = {}  # bumped by every cut
        self._last_arrival: dict[tuple[str, NodeId, NodeId], float] = {}  # FIFO per link
        self.in_flight = 0

    def close(self) -> None:
        for node in list(self.live):
            self.kill(node)
        self.loop.run_for(0)
        self.loop.close()

    # -- what the test does to the cluster ---------------------------------------------

    def start(self, node: NodeId, *, force: bool = False) -> None:
        assert node not in self.live, f"{node} is running"
        self.side.setdefault(node, 0)
        inbox_send, inbox = anyio.create_memory_object_stream[ElectionMessage](math.inf)
        members_send, members = anyio.create_memory_object_stream[tuple[NodeId, bool]](
            math.inf)
        masters: list[NodeId] = []

        async def publish(message: ElectionMessage) -> None:
            self._broadcast(node, message)

        async def on_result(master: NodeId) -> None:
            masters.append(master)

        election = Election(node_id=node, votes=SendThrough(publish),
                            results=SendThrough(on_result),
                            commands_seen=lambda: 0, force_master=force,
                            timeout=self.timeout, coalesce=self.coalesce)
        task = self.loop.create_task(election.run(members, inbox))
        self.live[node] = SimNode(node, election, task, inbox_send, members_send, force,
                                  masters)
        for other in self.live:
            if other != node and self.reachable(node, other):
                self._notify(other, node, True)
                self._notify(node, other, True)

    def kill(self, node: NodeId) -> None:
        sim = self.live.pop(node)
        sim.task.cancel()
        for other in self.live:
            if self.reachable(node, other):
                self._notify(other, node, False)

    def partition(self, sides: Iterable[Iterable[NodeId]]) -> None:
        """Every node named goes to its side's number; the rest to side 0."""
        before = dict(self.side)
        self.side = dict.fromkeys(self.side, 0)
        for number, members in enumerate(sides, start=1):
            for node in members:
                self.side[node] = number
        self._links_changed(before)

    def heal(self) -> None:
        before = dict(self.side)
        self.side = dict.fromkeys(self.side, 0)
        self._links_changed(before)

    def run_for(self, seconds: float) -> None:
        self.loop.run_for(seconds)

    # -- what the test reads --------------------------------------------------------------

    def reachable(self, a: NodeId, b: NodeId) -> bool:
        return a == b or self.side.get(a, 0) == self.side.get(b, 0)

    def components(self) -> list[set[NodeId]]:
        """The live nodes of each side that has any."""
        sides: dict[int, set[NodeId]] = {}
        for node in self.live:
            sides.setdefault(self.side[node], set()).add(node)
        return [sides[number] for number in sorted(sides)]

    def quiet(self) -> bool:
        """Nothing in flight and no election running or wanted anywhere."""
        return self.in_flight == 0 and not any(
            sim.election._campaigning or sim.election._wanted.is_set()
            for sim in self.live.values())

    def settle(self, limit: float = 120.0) -> float:
        """Run until quiet for an election timeout; the virtual seconds it took."""
        started = self.loop.time()
        quiet_since: float | None = None
        while self.loop.time() - started < limit:
            self.run_for(self.timeout / 4)
            if not self.quiet():
                quiet_since = None
            elif quiet_since is None:
                quiet_since = self.loop.time()
            elif self.loop.time() - quiet_since >= self.timeout:
                return self.loop.time() - started
        raise AssertionError(f"the elections did not settle within {limit} s of virtual "
                             f"time: {self.describe()}")

    def describe(self) -> str:
        return "; ".join(
            f"{n}(side {self.side[n]}, round {s.election.clock}, master {s.election.master}, "
            f"members {sorted(s.election.members)})" for n, s in sorted(self.live.items()))

    # -- the wire ------------------------------------------------------------------------

    def _broadcast(self, sender: NodeId, message: ElectionMessage) -> None:
        for receiver in list(self.live):
            if receiver == sender or not self.reachable(sender, receiver):
                continue
            copies = 2 if self.random.random() < self.faults.duplicate_probability else 1
            for _ in range(copies):
                self._deliver_later("vote", sender, receiver,
                                    self.faults.max_message_delay,
                                    lambda sim: sim.inbox.send_nowait(message))

    def _notify(self, receiver: NodeId, subject: NodeId, alive: bool) -> None:
        """`receiver` learns from liveliness that `subject` is alive or gone."""
        self._deliver_later("membership", subject, receiver,
                            self.faults.max_membership_delay,
                            lambda sim: sim.membership.send_nowait((subject, alive)),
                            survives_cut=True)

    def _deliver_later(self, channel: str, sender: NodeId, receiver: NodeId,
                       max_delay: float, deliver: Callable[[SimNode], None],
                       survives_cut: bool = False) -> None:
        link = (sender, receiver)
        epoch = self._link_epoch.get(link, 0)
        incarnation = self.live[receiver]
        now = self.loop.time()
        # Strictly after the link's previous message: timers due at one instant may run in
        # any order, and a link delivers in order.
        arrival = max(now + self.random.uniform(0.0, max_delay),
                      self._last_arrival.get((channel, sender, receiver), now) + _TICK)
        self._last_arrival[channel, sender, receiver] = arrival
        self.in_flight += 1

        def arrive() -> None:
            self.in_flight -= 1
            if self.live.get(receiver) is not incarnation:
                return  # the receiver died (or was restarted) meanwhile
            if not survives_cut and self._link_epoch.get(link, 0) != epoch:
                return  # the link was cut while the message was on it
            deliver(incarnation)

        self.loop.call_at(arrival, arrive)

    def _links_changed(self, before: dict[NodeId, int]) -> None:
        nodes = sorted(self.live)
        for a in nodes:
            for b in nodes:
                if a == b:
                    continue
                was = before.get(a, 0) == before.get(b, 0)
                now = self.reachable(a, b)
                if was and not now:
                    self._link_epoch[a, b] = self._link_epoch.get((a, b), 0) + 1
                if was != now:
                    self._notify(b, a, now)

