"""Local delivery changes nothing a node can see: with it on and off, whole nodes on the
in-memory bus (echo engine in real runners) apply the same indexed events in the same
order and reach the same State, alone and as three with the master moving; with it on, a
node's messages to itself are never sealed."""

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

from skulk.cluster.cluster_test import MODEL, Cluster, chat, cluster, place
from skulk.node import Node
from skulk.routing import topics
from skulk.shared.types.events import IndexedEvent
from skulk.shared.types.ids import SessionId
from skulk.trust.envelope import MessageSigner

__all__ = ["cluster"]  # the fixture

Applied = dict[tuple[SessionId, int], IndexedEvent]


@contextmanager
def counting_seals(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many messages were sealed, by topic (the key's last chunk but an address)."""
    sealed: Counter[str] = Counter()
    seal = MessageSigner.seal

    def counted(self: MessageSigner, key: str, payload: bytes) -> bytes:
        parts = key.split("/")
        sealed[parts[2]] += 1  # skulk/<fingerprint>/<topic>[/<address>]
        return seal(self, key, payload)

    monkeypatch.setattr(MessageSigner, "seal", counted)
    yield sealed


class AppliedEvents:
    """Every indexed event each node's replica applies, from its start on."""

    def __init__(self, tasks: anyio.abc.TaskGroup) -> None:
        self.by_node: dict[str, list[IndexedEvent]] = {}
        self._followed: dict[str, Node] = {}
        self._tasks = tasks

    def caught_up(self, nodes: list[Node]) -> bool:
        """Whether what was collected reaches what each of `nodes` applied (a replica
        hands its events to a collector a loop turn or more after it applies them)."""
        return all(self.by_node[name] and self.by_node[name][-1].index
                   == node.replica.state.last_event_applied_idx
                   for name, node in self._followed.items() if node in nodes)

    def follow(self, name: str, node: Node) -> None:
        self._followed[name] = node
        applied = self.by_node.setdefault(name, [])
        stream = node.replica.subscribe()

        async def collect() -> None:
            async with stream:
                async for indexed in stream:
                    applied.append(indexed)

        self._tasks.start_soon(collect)


async def start(cluster: Cluster, events: AppliedEvents, name: str, local: bool) -> Node:
    node = await cluster.start(name, local_delivery=local)
    events.follow(name, node)
    return node


async def settled(nodes: list[Node], events: AppliedEvents, timeout: float = 20.0) -> None:
    """Every request finished and forgotten, every node's replica in the master's own
    State, and `events` holding all that each applied."""
    with anyio.fail_after(timeout):
        while True:
            masters = [n.seat.master for n in nodes
                       if n.seat is not None and n.seat.master is not None]
            if len(masters) == 1 and not masters[0].state.tasks:
                if all(n.replica.state == masters[0].state for n in nodes) \
                        and events.caught_up(nodes):
                    return
            await anyio.sleep(0.05)


def check_same_events_in_order(events: AppliedEvents, names: list[str]) -> None:
    """Each node applied its events in index order within a session, with no gap, and
    every event that several nodes applied is the same event on each."""
    seen: Applied = {}
    for name in names:
        applied = events.by_node[name]
        assert applied, f"node {name} applied nothing"
        for before, after in zip(applied, applied[1:], strict=False):
            if after.session == before.session:
                assert after.index == before.index + 1, f"{name}: {before.index} → {after.index}"
        for indexed in applied:
            first = seen.setdefault((indexed.session, indexed.index), indexed)
            assert first == indexed, f"{name} applied another event at {indexed.index}"


@pytest.mark.anyio
@pytest.mark.parametrize("local", [False, True], ids=["round_trip", "local"])
async def test_a_lone_node_applies_the_same_events_either_way(
        cluster: Cluster, local: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    with counting_seals(monkeypatch) as sealed:
        events = AppliedEvents(cluster.tasks)
        a = await start(cluster, events, "a", local)
        await cluster.converged()
        assert await chat(a) == "hello from the cluster"
        assert await chat(a, "and once more") == "and once more"
        await settled([a], events)
    check_same_events_in_order(events, ["a"])
    assert a.dropped.total() == 0
    kinds = Counter(type(indexed.event).__name__ for indexed in events.by_node["a"])
    assert kinds["TaskCreated"] == 2 and kinds["TaskDeleted"] == 2
    own = sealed[topics.COMMANDS.name] + sealed[topics.GLOBAL_EVENTS.name] \
        + sealed[topics.LOCAL_EVENTS.name]
    if local:  # nobody else listens: nothing of the control plane is sealed
        assert own == 0
    else:
        assert sealed[topics.COMMANDS.name] >= 2 and sealed[topics.GLOBAL_EVENTS.name] > 0


@pytest.mark.anyio
@pytest.mark.parametrize("local", [False, True], ids=["round_trip", "local"])
async def test_three_nodes_apply_the_same_events_as_the_master_moves(
        cluster: Cluster, local: bool) -> None:
    events = AppliedEvents(cluster.tasks)
    for name in ("a", "b", "c"):
        await start(cluster, events, name, local)
    master_id = await cluster.converged()
    first_master = cluster.name_of(master_id)
    # Served away from the master, so the model outlives it.
    await place(cluster.nodes[first_master], MODEL, excluded=[master_id])
    for name, node in cluster.nodes.items():
        assert await chat(node, f"asked on {name}") == f"asked on {name}"
    await settled(list(cluster.nodes.values()), events)
    await cluster.kill(first_master)
    second_master = cluster.name_of(await cluster.converged())
    assert second_master != first_master
    survivors = sorted(cluster.nodes)
    for name in survivors:
        node = cluster.nodes[name]
        assert await chat(node, f"then on {name}") == f"then on {name}"
    await settled(list(cluster.nodes.values()), events)
    check_same_events_in_order(events, survivors)
    sessions = {indexed.session for name in survivors for indexed in events.by_node[name]}
    assert len(sessions) >= 2  # the new master's session came after the first one's
    for name in survivors:
        assert cluster.nodes[name].dropped.total() == 0
