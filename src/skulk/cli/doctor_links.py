"""`skulk doctor`'s checks of a running node's place in its cluster, from its `GET
/cluster`: where it listens, whether it sees its cluster and reaches its `--peer`
endpoints, and whether its side holds a majority."""

from typing import Any

from skulk.cli.doctor_checks import Check
from skulk.cli.status_view import QUORUM_MEANING


def endpoints_check(cluster: dict[str, Any]) -> Check:
    own: dict[str, Any] = next(
        (n for n in cluster["nodes"] if n["node_id"] == cluster["node_id"]), {})
    endpoints = own.get("endpoints") or {}
    listening = ", ".join(endpoints.get("cluster") or []) or "not known yet"
    return Check("endpoints", "OK", f"cluster {listening}; API {endpoints.get('api')}")


def links_checks(cluster: dict[str, Any]) -> list[Check]:
    """A node cut off from its cluster fails; a `--peer` it cannot use warns."""
    if cluster.get("isolated"):
        return [Check("cluster links", "FAIL", str(cluster.get("isolation_reason")),
                      "give --peer a member's cluster endpoint (its `skulk status` shows "
                      "it) and let this machine reach that port")]
    checks = [Check(f"peer {peer['endpoint']}", "WARN", str(peer["problem"]),
                    "check --peer: it names a member's cluster endpoint (`skulk status` "
                    "lists each node's)")
              for peer in cluster.get("peers", []) if peer.get("problem")]
    members = sum(1 for node in cluster["nodes"] if node["alive"])
    return checks or [Check("cluster links", "OK", f"{members} member(s) in sight")]


def partition_check(cluster: dict[str, Any]) -> Check:
    partition = cluster.get("partition") or {}
    if partition.get("majority", True):
        return Check("partition", "OK", "this side holds a majority of the agreed members")
    quorum = partition.get("quorum", "available")
    return Check("partition", "WARN", f"minority: {partition.get('reason')}; --quorum "
                 f"{quorum}: {QUORUM_MEANING.get(quorum, '')}",
                 "bring the missing members back, or `skulk cluster forget NODE` for one "
                 "gone for good")
