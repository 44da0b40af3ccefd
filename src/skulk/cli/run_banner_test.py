from pathlib import Path

from skulk.cli.run_banner import cluster_line, up_banner
from skulk.node_config import NodeConfig


def test_the_banner_names_the_real_cluster_endpoint_and_api_url() -> None:
    banner = up_banner(NodeConfig(data_dir=Path("d"), api_port=52415), "node-a",
                       ["tcp/127.0.0.1:7447"], "1 compute thread per runner (2 physical cores)")
    assert banner.splitlines()[0] == "node node-a is up"
    assert "Skulk is serving at http://127.0.0.1:52415" in banner
    assert "  cluster: tcp/127.0.0.1:7447  (loopback: only nodes on this machine can join, " \
           "with --peer tcp/127.0.0.1:7447;" in banner
    assert "  runners: 1 compute thread per runner (2 physical cores); --threads N" in banner


def test_endpoints_other_machines_can_reach_are_offered_as_they_are() -> None:
    assert cluster_line(["tcp/192.168.1.10:7447", "tcp/127.0.0.1:7447"]) == (
        "  cluster: tcp/192.168.1.10:7447, tcp/127.0.0.1:7447  (other machines join with "
        "--peer one of these)")
