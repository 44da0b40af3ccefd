import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from loguru import logger

from skulk.cluster.isolation import (
    IsolationWatch,
    Probed,
    connect_once,
    expected_company,
    peer_link,
)
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeEndpoints, NodeTelemetry, Reachability
from skulk.testing.ports import free_port

A, B = NodeId("node-a"), NodeId("node-b")
PEER = "tcp/127.0.0.1:7447"


def reading(node: NodeId, *endpoints: str) -> NodeTelemetry:
    return NodeTelemetry(node_id=node, stamp=0.0, memory_total_bytes=1, cpu_count=1,
                         memory_available_bytes=1, backends=[], has_worker=False,
                         endpoints=NodeEndpoints(cluster=list(endpoints)),
                         reachability=Reachability(addresses=["127.0.0.1"]))


@contextmanager
def warnings_logged() -> Iterator[list[str]]:
    said: list[str] = []
    sink = logger.add(lambda message: said.append(message.record["message"]), level="INFO")
    try:
        yield said
    finally:
        logger.remove(sink)


def test_a_refused_port_is_named_and_an_open_one_is_not() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        opened = connect_once("127.0.0.1", listening.getsockname()[1], 1.0)
    assert opened.problem is None and "127.0.0.1" in opened.addresses
    assert connect_once("127.0.0.1", free_port(), 1.0).problem == "connection refused"


def test_a_node_expects_company_when_it_joined_agreed_with_others_or_was_given_peers() -> None:
    assert expected_company(A, [A], joined=False, peers=[]) is None, "a cluster of one"
    assert "joined" in (expected_company(A, [], joined=True, peers=[]) or "")
    assert "2 members (node-b" in (expected_company(A, [A, B], joined=False, peers=[]) or "")
    assert PEER in (expected_company(A, [A], joined=False, peers=[PEER]) or "")


def test_a_peer_endpoint_that_answers_but_is_no_members_says_so_once_settled() -> None:
    here = Probed(frozenset({"127.0.0.1"}), None)
    member = peer_link(PEER, here, {("127.0.0.1", 7447)}, set(), settled=True)
    assert member.member and member.problem is None
    stranger = peer_link(PEER, here, {("127.0.0.1", 9999)}, set(), settled=True)
    assert not stranger.member and stranger.reachable and "no member" in (stranger.problem or "")
    assert peer_link(PEER, here, set(), set(), settled=False).problem is None, \
        "members' readings may not have arrived yet"
    assert "own" in (peer_link(PEER, here, set(), {("127.0.0.1", 7447)}, True).problem or "")
    refused = peer_link(PEER, Probed(frozenset({"127.0.0.1"}), "connection refused"), set(),
                        set(), settled=False)
    assert not refused.reachable and refused.problem == "connection refused"


@pytest.mark.anyio
async def test_a_joined_node_alone_past_the_grace_is_isolated_and_says_so_repeatedly() -> None:
    now = [0.0]
    live: set[NodeId] = {A}

    async def refused(endpoint: str) -> Probed:
        return Probed(frozenset({"127.0.0.1"}), "connection refused")

    watch = IsolationWatch(node_id=A, peers=[PEER], joined=True, live=lambda: live,
                           agreed=lambda: [A], readings=lambda: {A: reading(A)},
                           probe=refused, clock=lambda: now[0], grace=10.0, warn_every=30.0)
    with warnings_logged() as said:
        await watch.check()
        assert said == [f"cannot reach peer {PEER}: connection refused"], "named at once"
        assert not watch.links().isolated, "not yet: links take a moment"
        for moment in (10.0, 20.0, 40.0):
            now[0] = moment
            await watch.check()
    links = watch.links()
    assert links.isolated and "joined a cluster" in (links.reason or "")
    assert f"peer {PEER}: connection refused" in (links.reason or "")
    assert [link.endpoint for link in links.peers if not link.reachable] == [PEER]
    assert sum("sees no other member" in line for line in said) == 2, "at 10 s and at 40 s"
    assert sum("cannot reach" in line for line in said) == 1, "a peer's trouble once a change"

    live.add(B)
    with warnings_logged() as said:
        await watch.check()
    assert not watch.links().isolated and "again" in said[-1]


@pytest.mark.anyio
async def test_the_first_node_of_a_cluster_alone_is_not_isolated() -> None:
    async def never(endpoint: str) -> Probed:
        raise AssertionError("no --peer to probe")

    watch = IsolationWatch(node_id=A, peers=[], joined=False, live=lambda: {A},
                           agreed=lambda: [A], readings=dict, probe=never,
                           clock=lambda: 100.0, grace=0.0)
    await watch.check()
    assert not watch.links().isolated and watch.links().peers == []
