"""`skulk status`'s text, from a node's `GET /cluster`: first what is wrong with the
cluster as a whole (this node cut off, a `--peer` it cannot reach, a side without a
majority), then each node with its state and endpoints, then instances and tasks."""

from typing import Any

from skulk.cli.units import layers_text, size_text

# What each `--quorum` makes of a side without a majority (the `--quorum` help says it too).
QUORUM_MEANING = {
    "available": "it serves and accepts changes, and hands them to the majority when the "
                 "partition heals",
    "majority": "it refuses changes and new requests (503) until the partition heals",
}


def fetch_text(fetch: dict[str, Any] | None) -> str:
    """`, 38.1 MiB of 114 MiB from peer a` for a rank whose weights are on their way."""
    if not fetch:
        return ""
    return (f", {size_text(fetch['done_bytes'])} of {size_text(fetch['total_bytes'])} from "
            f"{fetch['source']}")


def warnings(cluster: dict[str, Any]) -> list[str]:
    """The cluster-wide troubles `/cluster` reports, one line each."""
    lines = []
    if cluster.get("isolated"):
        lines.append(f"  ISOLATED: {cluster.get('isolation_reason')}")
    else:
        lines += [f"  peer {peer['endpoint']}: {peer['problem']}"
                  for peer in cluster.get("peers", []) if peer.get("problem")]
    partition = cluster.get("partition") or {}
    if partition and not partition.get("majority", True):
        quorum = partition.get("quorum", "available")
        lines.append(f"  MINORITY: {partition.get('reason')}; --quorum {quorum}: "
                     f"{QUORUM_MEANING.get(quorum, '')} (`skulk cluster forget NODE` "
                     "drops a member gone for good)")
    return lines


def node_line(node: dict[str, Any], master: str | None) -> str:
    memory = node["memory_available_bytes"]
    free = f"{size_text(memory)} available" if memory else "no readings"
    role = " (master)" if node["node_id"] == master else ""
    state = node.get("state") or ("up" if node["alive"] else "gone")
    endpoints = node.get("endpoints") or {}
    cluster = ", ".join(endpoints.get("cluster") or []) or "?"
    api = endpoints.get("api") or node.get("api_url") or "none"
    return (f"  node {node['node_id']}{role}: {state}, {free}, "
            f"backends {', '.join(node['backends']) or 'none'}, cluster {cluster}, "
            f"api {api}, health {node['health']}")


def status_lines(cluster: dict[str, Any]) -> list[str]:
    master = cluster["master_node_id"]
    lines = [f"node {cluster['node_id']}, master {master or 'not elected yet'}",
             *warnings(cluster)]
    for node in cluster["nodes"]:
        lines.append(node_line(node, master))
        lines += [f"    {reason['level']} {reason['code']}: {reason['message']} "
                  f"({reason['remedy']})" for reason in node["health_reasons"]]
    for instance in cluster["instances"]:
        lines.append(f"  instance {instance['instance_id']}: {instance['model_id']} on "
                     f"{instance['engine']}, {instance['status']}")
        lines += [f"    rank {rank['rank']} on {rank['node_id']}: "
                  f"{layers_text(rank['start_layer'], rank['end_layer'])}, "
                  f"{rank['runner_status']}{fetch_text(rank.get('fetch'))}"
                  for rank in instance["ranks"]]
    lines.append(f"  tasks in flight: {cluster['tasks_in_flight']}")
    return lines
