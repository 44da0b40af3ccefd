"""Three real `skulk run` processes on 127.0.0.1: edges come from observed reachability on
the ports each node advertises, and a killed node's edges go within the TTL."""

import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from skulk.cluster.reachability import EDGE_TTL_SECONDS, PROBE_INTERVAL_SECONDS
from skulk.shared.topology import ring_hosts
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from tests.netns_hosts import NetnsCluster, needs_hosts
from tests.node_process import NodeProcess, meshed_nodes

# First telemetry, a probe round (interval plus jitter), then the next telemetry.
EDGES_APPEAR_SECONDS = 30.0


@pytest.fixture
def three_light_nodes(tmp_path: Path) -> Iterator[list[NodeProcess]]:
    with meshed_nodes(tmp_path, 3, "--no-worker") as nodes:
        yield nodes


def own_entry(node: NodeProcess) -> dict[str, Any]:
    cluster = node.cluster()
    entries: list[dict[str, Any]] = cluster["nodes"]
    [entry] = [n for n in entries if n["node_id"] == cluster["node_id"]]
    return entry


def reachable(node: NodeProcess) -> dict[str, list[str]]:
    """Peer id → addresses that answered, as this node reports itself."""
    return {p["node_id"]: [a["address"] for a in p["addresses"]]
            for p in own_entry(node)["reachable_peers"]}


def reaches_exactly(node: NodeProcess, peers: set[str]) -> bool:
    return set(reachable(node)) == peers


def test_each_node_reaches_the_others_and_loses_a_killed_one(
        three_light_nodes: list[NodeProcess]) -> None:
    nodes = three_light_nodes
    ids = [n.node_id() for n in nodes]
    for node, node_id in zip(nodes, ids, strict=True):
        others = set(ids) - {node_id}
        node.wait_until(partial(reaches_exactly, node, others), EDGES_APPEAR_SECONDS,
                        "edges to both other nodes")
    first = own_entry(nodes[0])
    assert "127.0.0.1" in first["addresses"]
    # Every node binds loopback only here, so loopback is the one address that answers.
    assert all(addresses == ["127.0.0.1"] for addresses in reachable(nodes[0]).values())
    topology = nodes[0].state()["topology"]
    assert len(topology["edges"]) == 6
    ports = {n["node_id"]: n["listen_ports"] for n in topology["nodes"]}
    assert nodes[1].transport_port in ports[ids[1]] and nodes[1].api_port in ports[ids[1]]
    assert all(e["addresses"][0]["rtt_ms"] >= 0 for e in topology["edges"])

    nodes[2].kill()
    gone = ids[2]

    def forgotten(node: NodeProcess) -> bool:
        edges = node.state()["topology"]["edges"]
        return (gone not in reachable(node)
                and all(gone not in (e["from_node"], e["to_node"]) for e in edges))

    bound = EDGE_TTL_SECONDS + 2 * PROBE_INTERVAL_SECONDS
    for survivor in nodes[:2]:
        survivor.wait_until(partial(forgotten, survivor), bound,
                            "the killed node's edges to disappear")
    assert set(reachable(nodes[0])) == {ids[1]}
    assert set(reachable(nodes[1])) == {ids[0]}


def reachable_in(hosts: NetnsCluster, host: int) -> dict[str, list[str]] | None:
    cluster = hosts.request(host, "GET", "/cluster", timeout=5)
    if cluster is None:
        return None
    [entry] = [n for n in cluster["nodes"] if n["node_id"] == cluster["node_id"]]
    return {p["node_id"]: [a["address"] for a in p["addresses"]]
            for p in entry["reachable_peers"]}


@pytest.mark.netns
@needs_hosts
def test_hosts_in_namespaces_see_each_other_at_their_own_addresses(tmp_path: Path) -> None:
    with NetnsCluster(3, tmp_path) as hosts:
        everyone = [0, 1, 2]
        hosts.wait(lambda: all(hosts.request(h, "GET", "/healthz", timeout=2) is not None
                               for h in everyone), 60, "every node's API")
        ids = [hosts.request(h, "GET", "/node_id")["node_id"] for h in everyone]
        expected = {ids[h]: [hosts.address(h)] for h in everyone}

        def sees_the_others(host: int) -> bool:
            seen = reachable_in(hosts, host)
            return seen == {n: a for n, a in expected.items() if n != ids[host]}

        hosts.wait(lambda: all(sees_the_others(h) for h in everyone), 60,
                   "each host to reach the others at their namespace address, not loopback")
        state = hosts.request(0, "GET", "/state")
        telemetry = {NodeId(n): NodeTelemetry.model_validate(r)
                     for n, r in state["telemetry"].items()}
        assert ring_hosts([NodeId(i) for i in ids], telemetry, now=time.time()) == [
            hosts.address(h) for h in everyone]

        hosts.isolate(2)
        hosts.wait(lambda: all(ids[2] not in (reachable_in(hosts, h) or {ids[2]: []})
                               for h in (0, 1)),
                   EDGE_TTL_SECONDS + 2 * PROBE_INTERVAL_SECONDS,
                   "the cut host's edges to disappear")
        assert reachable_in(hosts, 0) == {ids[1]: [hosts.address(1)]}
