from typing import Any

from skulk.cli.doctor_links import endpoints_check, links_checks, partition_check


def cluster(**fields: Any) -> dict[str, Any]:
    return {"node_id": "a", "nodes": [{"node_id": "a", "alive": True, "endpoints": {
        "cluster": ["tcp/127.0.0.1:7447"], "api": "http://127.0.0.1:52415"}}],
        "partition": {"majority": True}, "peers": [], "isolated": False, **fields}


def test_the_nodes_endpoints_are_shown() -> None:
    assert endpoints_check(cluster()).detail == \
        "cluster tcp/127.0.0.1:7447; API http://127.0.0.1:52415"


def test_an_isolated_node_fails_and_a_peer_it_cannot_use_warns() -> None:
    [isolated] = links_checks(cluster(isolated=True, isolation_reason="sees no other member"))
    assert isolated.level == "FAIL" and "--peer" in isolated.fix
    [peer] = links_checks(cluster(peers=[{"endpoint": "tcp/10.0.0.9:7447",
                                          "problem": "connection refused"}]))
    assert (peer.name, peer.level, peer.detail) == ("peer tcp/10.0.0.9:7447", "WARN",
                                                    "connection refused")
    assert [check.level for check in links_checks(cluster())] == ["OK"]


def test_a_minority_side_warns_with_what_its_quorum_does() -> None:
    assert partition_check(cluster()).level == "OK"
    check = partition_check(cluster(partition={
        "majority": False, "quorum": "available", "reason": "holds 1 of the 2 members"}))
    assert check.level == "WARN" and "accepts changes" in check.detail
    assert "forget" in check.fix
