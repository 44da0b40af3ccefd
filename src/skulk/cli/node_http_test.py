"""`skulk status` renders node health as `/cluster` gives it: each reason with its level,
its code (`cooling_off`, `unhealthy`, ...), what happened and what to do."""

from typing import Any

import httpx
import pytest

from skulk.api.node_health import GIB, node_health
from skulk.cli import node_http
from skulk.shared.types.ids import NodeId
from skulk.shared.types.state import NodeCoolOff, State
from skulk.shared.types.telemetry import NodeTelemetry

A, B, C = NodeId("node-a"), NodeId("node-b"), NodeId("node-c")


def _reading(node: NodeId) -> NodeTelemetry:
    return NodeTelemetry(node_id=node, stamp=100.0, memory_total_bytes=8 * GIB,
                         memory_available_bytes=4 * GIB, cpu_count=2, backends=["cpu"],
                         has_worker=True, disk_total_bytes=200 * GIB,
                         disk_free_bytes=100 * GIB)


def _cluster() -> dict[str, Any]:
    """A `/cluster` answer whose health comes from `node_health` itself."""
    state = State(node_cool_offs={
        B: NodeCoolOff(reason="the runner did not report within 60 s of starting",
                       until=400.0),
        C: NodeCoolOff(reason="a running request made no progress for 30 s", until=900.0,
                       failures=2)})
    health = node_health({A, B, C}, {n: _reading(n) for n in (A, B, C)}, {A, B, C}, state,
                         now=101.0)
    return {"node_id": A, "master_node_id": A, "instances": [], "tasks_in_flight": 0,
            "nodes": [{"node_id": n, "alive": True, "memory_available_bytes": 4 * GIB,
                       "backends": ["cpu"], "api_url": f"http://{n}:52415",
                       "health": health[n]["level"], "health_reasons": health[n]["reasons"]}
                      for n in (A, B, C)]}


def test_status_shows_cooling_off_and_unhealthy_nodes(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    answer = httpx.Response(200, json=_cluster())
    monkeypatch.setattr(node_http, "request_node", lambda *args, **kwargs: answer)
    assert node_http.status("http://node-a:52415") == 0
    lines = capsys.readouterr().out.splitlines()
    [a_line] = [line for line in lines if line.startswith("  node node-a")]
    assert a_line.endswith("health ok")
    [b_line] = [i for i, line in enumerate(lines) if line.startswith("  node node-b")]
    assert lines[b_line].endswith("health warn")
    cooling = lines[b_line + 1]
    assert cooling.startswith("    warn cooling_off: cooling off: 1 runner failure(s)")
    assert "did not report within 60 s" in cooling and "299 s more" in cooling
    assert "skulk logs" in cooling
    [c_line] = [i for i, line in enumerate(lines) if line.startswith("  node node-c")]
    assert lines[c_line].endswith("health error")
    assert lines[c_line + 1].startswith("    error unhealthy: unhealthy: 2 runner failure(s)")
    assert "no progress for 30 s" in lines[c_line + 1]
