"""Cluster diagnostics and traces between hosts whose APIs listen only on their own
loopback (the default): peers read each other over the cluster's TLS links, not HTTP."""

from pathlib import Path

import pytest

from tests.netns_hosts import NetnsCluster, needs_hosts

pytestmark = [pytest.mark.integration, pytest.mark.netns, needs_hosts]


def test_cluster_diagnostics_and_traces_reach_peers_behind_loopback_apis(
        tmp_path: Path) -> None:
    with NetnsCluster(2, tmp_path, api_on_host_address=False,
                      extra_args=("--no-auto-place",)) as hosts:
        hosts.wait(lambda: hosts.one_master([0, 1]) is not None, 60, "one master")
        status, text = hosts.place_once_readings_are_in(0, {"model_id": "smollm2-135m"})
        assert status == 201, (status, text)
        hosts.wait(lambda: hosts.chat_ok(1), 120, "host 1 to chat through host 0's runner")
        assert hosts.request(1, "POST", "/v1/tracing", {"enabled": True}) is not None
        assert hosts.chat_ok(1)
        ids = {h: hosts.request(h, "GET", "/node_id")["node_id"] for h in (0, 1)}

        cluster = hosts.request(0, "GET", "/cluster")
        assert all(node["api_url"] is None for node in cluster["nodes"]), \
            "a loopback API is not advertised to other machines"
        diagnostics = hosts.request(0, "GET", "/v1/diagnostics/cluster")
        assert diagnostics["errors"] == {}
        assert set(diagnostics["nodes"]) == set(ids.values())
        traces = hosts.request(0, "GET", "/v1/cluster/traces")
        held_by_host_1 = traces["nodes"][ids[1]]
        assert held_by_host_1, "host 1's traces are read from host 0"
        trace = hosts.request(0, "GET", f"/v1/cluster/traces/{held_by_host_1[-1]['trace_id']}")
        assert trace is not None and trace["traceEvents"]
