"""`skulk status`'s text, from a node's `GET /cluster`: first what is wrong with the
cluster as a whole (this node cut off, a `--peer` it cannot reach, a side without a
majority), then each node with its state, endpoints and GPUs, then instances and tasks.

A large cluster lists only the nodes worth a look (this one, the master, any not up or
not healthy, any holding a rank) and counts the rest in one line, so 200 nodes fit a
screen; `--all` lists every node.
"""

from collections import Counter
from typing import Any

from skulk.cli.units import layers_text, size_text

# Up to this many nodes every one gets its line.
LISTED_NODES = 24

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


def gpu_lines(node: dict[str, Any]) -> list[str]:
    """One line per GPU the node reported: `    gpu 0: NVIDIA H200 (cuda), 1.00 GiB of
    140 GiB used`. Its memory is `not known` when the driver gave none (a Vulkan device
    without sysfs figures)."""
    lines = []
    for index, gpu in enumerate(node.get("gpus") or []):
        total, free = gpu["vram_total_bytes"], gpu["vram_free_bytes"]
        memory = (f"{size_text(max(total - free, 0))} of {size_text(total)} used" if total
                  else "memory not known")
        lines.append(f"    gpu {index}: {gpu['name']} ({gpu['backend']}), {memory}")
    return lines


def _worth_a_look(node: dict[str, Any], cluster: dict[str, Any],
                  ranked: set[str]) -> bool:
    node_id = node["node_id"]
    return (node_id in (cluster["node_id"], cluster["master_node_id"]) or node_id in ranked
            or node.get("state", "up") != "up" or node["health"] != "ok")


def _rest_line(rest: list[dict[str, Any]]) -> str:
    """`  180 more nodes up and healthy (120 with workers; hosts: a x90, b x90)`."""
    workers = sum(1 for node in rest if node.get("has_worker"))
    hosts = Counter(node.get("hostname") or "?" for node in rest)
    shown = ", ".join(f"{host} x{count}" for host, count in hosts.most_common(5))
    more = f", {len(hosts) - 5} more hosts" if len(hosts) > 5 else ""
    return (f"  {len(rest)} more nodes up and healthy ({workers} with workers; hosts: "
            f"{shown}{more}); `skulk status --all` lists them")


def status_lines(cluster: dict[str, Any], every_node: bool = False) -> list[str]:
    master = cluster["master_node_id"]
    lines = [f"node {cluster['node_id']}, master {master or 'not elected yet'}",
             *warnings(cluster)]
    nodes = cluster["nodes"]
    ranked = {rank["node_id"] for instance in cluster["instances"]
              for rank in instance["ranks"]}
    listed = nodes if every_node or len(nodes) <= LISTED_NODES else [
        node for node in nodes if _worth_a_look(node, cluster, ranked)]
    if len(listed) < len(nodes):
        lines.append(f"  {len(nodes)} nodes")
    for node in listed:
        lines.append(node_line(node, master))
        lines += gpu_lines(node)
        lines += [f"    {reason['level']} {reason['code']}: {reason['message']} "
                  f"({reason['remedy']})" for reason in node["health_reasons"]]
    if len(listed) < len(nodes):
        lines.append(_rest_line([node for node in nodes if node not in listed]))
    for instance in cluster["instances"]:
        lines.append(f"  instance {instance['instance_id']}: {instance['model_id']} on "
                     f"{instance['engine']}, {instance['status']}")
        lines += [f"    rank {rank['rank']} on {rank['node_id']}: "
                  f"{layers_text(rank['start_layer'], rank['end_layer'])}, "
                  f"{rank['runner_status']}{fetch_text(rank.get('fetch'))}"
                  for rank in instance["ranks"]]
    lines.append(f"  tasks in flight: {cluster['tasks_in_flight']}")
    return lines
