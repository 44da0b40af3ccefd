"""A node's place in its cluster, with real processes and real Zenoh: a machine that joins
through a `--peer` port nobody listens on is admitted (the token names the admitting port)
but reaches no member, and must say so by endpoint rather than pass for a cluster of its
own; a node stopped on purpose shows as stopped; every node shows its real endpoints."""

import re
import time
from pathlib import Path

import pytest

from skulk.testing.ports import free_port
from tests.node_process import NodeProcess, meshed_nodes
from tests.skulk_command import doctor_rows, run_skulk

pytestmark = pytest.mark.integration


def test_a_join_through_a_wrong_peer_port_says_it_is_isolated(tmp_path: Path) -> None:
    namespace = f"isolated-{time.monotonic_ns()}"
    first = NodeProcess(tmp_path / "a", "--namespace", namespace, "--no-worker")
    first.start()
    try:
        token = run_skulk("cluster", "token", "--data-dir", str(first.data_dir))
        assert token.returncode == 0, token.stderr
        wrong = f"tcp/127.0.0.1:{free_port()}"
        second = NodeProcess(tmp_path / "b", "--namespace", namespace, "--no-worker",
                             "--join", token.stdout.strip(), "--peer", wrong)
        second.start()
        try:
            second.wait_until(lambda: second.cluster()["isolated"], 60,
                              "the joined node to call itself isolated")
            seen = second.cluster()
            assert seen["peers_unreachable"] == [wrong]
            assert "joined a cluster another node made" in seen["isolation_reason"]
            assert [n["node_id"] for n in seen["nodes"]] == [second.node_id()]
            log = second.log()
            assert f"cannot reach peer {wrong}: connection refused" in log
            assert "this node sees no other member of its cluster" in log
            status = run_skulk("status", "--url", second.url)
            assert "  ISOLATED: this node sees no other member" in status.stdout, status.stdout
            doctor = doctor_rows(run_skulk("doctor", "--url", second.url, "--listen",
                                           f"tcp/127.0.0.1:{free_port()}").stdout)
            assert doctor["cluster links"].startswith("FAIL")
            # The port the joiner should have named is the one A shows as its endpoint.
            [a_node] = first.cluster()["nodes"]
            assert a_node["endpoints"] == {
                "cluster": [f"tcp/127.0.0.1:{first.transport_port}"],
                "api": first.url}
        finally:
            second.stop()
    finally:
        first.stop()


def test_a_node_stopped_on_purpose_shows_as_stopped_and_leaves_a_minority(
        tmp_path: Path) -> None:
    with meshed_nodes(tmp_path, 2, "--no-worker") as (a, b):
        a.wait_until(lambda: len(a.state()["members"]) == 2, 60, "both agreed as members")
        b_id = b.node_id()
        assert b.stop() == 0

        def b_stopped() -> bool:
            return any(n["node_id"] == b_id and n["state"] == "stopped"
                       for n in a.cluster()["nodes"])
        a.wait_until(b_stopped, 60, "a to show b stopped")
        [b_row] = [n for n in a.cluster()["nodes"] if n["node_id"] == b_id]
        assert b_row["health"] == "warn", b_row
        status = run_skulk("status", "--url", a.url).stdout
        # b may have been the master; the minority left behind cannot elect another, so
        # b keeps its "(master)" mark (a fresh clone's run drew that order).
        assert re.search(rf"^  node {b_id}( \(master\))?: stopped,", status, re.M), status
        assert "  MINORITY: this side of the cluster holds 1 of the 2 members" in status
