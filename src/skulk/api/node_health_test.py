from typing import cast

from skulk.api.node_health import GIB, node_health
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId
from skulk.shared.types.runners import RunnerFailed
from skulk.shared.types.state import State
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.testing import factories as f

A, B = NodeId("node-a"), NodeId("node-b")


def reading(node: NodeId, stamp: float = 100.0, free: int = 100 * GIB) -> NodeTelemetry:
    return NodeTelemetry(node_id=node, stamp=stamp, memory_total_bytes=1,
                         memory_available_bytes=1, cpu_count=2, backends=[], has_worker=True,
                         disk_total_bytes=200 * GIB, disk_free_bytes=free)


def reasons_of(health: dict[NodeId, dict[str, object]], node: NodeId) -> list[dict[str, str]]:
    """The node's reasons as `node_health` lays them out (its return type leaves them open)."""
    return cast(list[dict[str, str]], health[node]["reasons"])


def test_a_healthy_node_is_ok() -> None:
    health = node_health({A}, {A: reading(A)}, {A}, State(), now=101.0)
    assert health[A] == {"level": "ok", "reasons": []}


def test_low_disk_warns_and_nearly_full_disk_errors_with_a_remedy() -> None:
    health = node_health({A, B}, {A: reading(A, free=3 * GIB), B: reading(B, free=GIB // 2)},
                         {A, B}, State(), now=101.0)
    assert health[A]["level"] == "warn" and health[B]["level"] == "error"
    [reason] = reasons_of(health, B)
    assert reason["code"] == "disk_full" and "free space" in reason["remedy"]


def test_stale_readings_and_departed_nodes() -> None:
    health = node_health({A, B}, {A: reading(A, stamp=70.0)}, {A}, State(), now=100.0)
    assert [r["code"] for r in reasons_of(health, A)] == ["stale_telemetry"]
    assert health[B]["level"] == "error"


def test_a_failed_runner_marks_its_node_in_error() -> None:
    state = State(instances={InstanceId("inst-1"): f.instance(node=A)},
                  runners={RunnerId("run-1"): RunnerFailed(error="out of memory")})
    health = node_health({A}, {A: reading(A)}, {A}, state, now=101.0)
    [reason] = reasons_of(health, A)
    assert reason["code"] == "runner_failed" and "out of memory" in reason["message"]


def test_a_node_cooling_off_warns_and_one_failing_again_and_again_is_unhealthy() -> None:
    from skulk.shared.types.state import NodeCoolOff
    state = State(node_cool_offs={
        A: NodeCoolOff(reason="did not report within 60 s", until=400.0),
        B: NodeCoolOff(reason="hung loading", until=900.0, failures=3)})
    health = node_health({A, B}, {A: reading(A), B: reading(B)}, {A, B}, state, now=101.0)
    [cooling] = reasons_of(health, A)
    assert health[A]["level"] == "warn" and cooling["code"] == "cooling_off"
    assert "did not report" in cooling["message"] and "299 s more" in cooling["message"]
    assert health[B]["level"] == "error" and reasons_of(health, B)[0]["code"] == "unhealthy"
    later = node_health({A}, {A: reading(A, stamp=500.0)}, {A}, state, now=501.0)
    assert later[A]["level"] == "ok"  # the cool-off ended


def test_a_node_stopped_on_purpose_warns_as_stopped_not_as_an_error() -> None:
    stopped = reading(B, stamp=80.0).model_copy(update={"stopping": True})
    health = node_health({A, B}, {A: reading(A), B: stopped}, {A}, State(), now=100.0)
    assert health[B]["level"] == "warn"
    assert [r["code"] for r in reasons_of(health, B)] == ["node_stopped"]
