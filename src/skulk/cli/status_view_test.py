from typing import Any

from skulk.cli.status_view import status_lines


def node(node_id: str, state: str, alive: bool) -> dict[str, Any]:
    return {"node_id": node_id, "alive": alive, "state": state,
            "memory_available_bytes": 2 * 1024**3, "backends": ["llama_cpp-cpu"],
            "api_url": None, "health": "ok" if alive else "warn", "health_reasons": [],
            "endpoints": {"cluster": [f"tcp/127.0.0.1:{7447 if alive else 7449}"],
                          "api": "http://127.0.0.1:52415"}}


def cluster(**fields: Any) -> dict[str, Any]:
    return {"node_id": "a", "master_node_id": "a", "instances": [], "tasks_in_flight": 0,
            "nodes": [node("a", "up", True), node("b", "stopped", False)],
            "partition": {"majority": True, "quorum": "available", "reason": None},
            "isolated": False, "isolation_reason": None, "peers": [],
            "peers_unreachable": [], **fields}


def test_each_node_shows_its_state_and_its_endpoints() -> None:
    lines = status_lines(cluster())
    assert lines[1] == ("  node a (master): up, 2.00 GiB available, backends llama_cpp-cpu, "
                        "cluster tcp/127.0.0.1:7447, api http://127.0.0.1:52415, health ok")
    assert lines[2].startswith("  node b: stopped,"), "a node stopped on purpose is not lost"


def test_a_minority_side_and_an_isolated_node_say_so_first() -> None:
    reason = "this side of the cluster holds 1 of the 2 members last agreed on (a, b)"
    lines = status_lines(cluster(
        partition={"majority": False, "quorum": "available", "reason": reason},
        isolated=True, isolation_reason="this node sees no other member of its cluster"))
    assert lines[1] == "  ISOLATED: this node sees no other member of its cluster"
    assert lines[2].startswith(f"  MINORITY: {reason}; --quorum available: it serves and "
                               "accepts changes")


def test_a_peer_it_cannot_reach_is_named() -> None:
    lines = status_lines(cluster(peers=[{"endpoint": "tcp/10.0.0.9:7447", "reachable": False,
                                         "member": False, "problem": "connection refused"}]))
    assert lines[1] == "  peer tcp/10.0.0.9:7447: connection refused"


def test_a_large_cluster_lists_the_nodes_worth_a_look_and_counts_the_rest() -> None:
    many = [node("a", "up", True), node("gone-1", "gone", False)]
    many += [{**node(f"n{i:03d}", "up", True), "hostname": f"rack{i % 2}",
              "has_worker": True} for i in range(198)]
    lines = status_lines(cluster(nodes=many))
    assert lines[1] == "  200 nodes"
    assert lines[2].startswith("  node a (master): up")
    assert lines[3].startswith("  node gone-1: gone")
    assert lines[4] == ("  198 more nodes up and healthy (198 with workers; hosts: rack0 x99, "
                        "rack1 x99); `skulk status --all` lists them")
    assert len(lines) == 6
    assert len(status_lines(cluster(nodes=many), every_node=True)) == 202


def test_each_gpu_shows_its_name_backend_and_memory_in_use() -> None:
    gpus = [{"name": "NVIDIA H200", "backend": "cuda", "vram_total_bytes": 140 * 1024**3,
             "vram_free_bytes": 139 * 1024**3},
            {"name": "AMD Radeon Pro", "backend": "vulkan", "vram_total_bytes": 0,
             "vram_free_bytes": 0}]
    lines = status_lines(cluster(nodes=[{**node("a", "up", True), "gpus": gpus},
                                        node("b", "up", True)]))
    assert lines[2:4] == ["    gpu 0: NVIDIA H200 (cuda), 1.00 GiB of 140 GiB used",
                          "    gpu 1: AMD Radeon Pro (vulkan), memory not known"]
    assert lines[4].startswith("  node b: up"), "a node without GPUs gets no GPU line"
