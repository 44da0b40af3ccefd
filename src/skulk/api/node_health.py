"""Derived node health: ok, warn or error, each reason with what to do about it.

A pure reading of what the node already knows (telemetry, membership, State); nothing here
is gossiped or stored.
"""

from collections.abc import Mapping, Set
from dataclasses import asdict, dataclass
from typing import Literal

from skulk.shared.types.ids import NodeId
from skulk.shared.types.runners import RunnerFailed
from skulk.shared.types.state import State
from skulk.shared.types.telemetry import NodeTelemetry

Level = Literal["ok", "warn", "error"]
GIB = 1024**3
DISK_ERROR_BYTES = 1 * GIB
DISK_WARN_BYTES = 5 * GIB
DISK_WARN_FRACTION = 0.10
# Readings come every 2 s; three missed in a row is worth a warning.
STALE_TELEMETRY_SECONDS = 6.0


@dataclass(frozen=True)
class HealthReason:
    code: str
    level: Level
    message: str
    remedy: str


def _disk(reading: NodeTelemetry) -> HealthReason | None:
    free, total = reading.disk_free_bytes, reading.disk_total_bytes
    if total <= 0:
        return None
    remedy = "free space on the volume that holds the node's data dir"
    if free < DISK_ERROR_BYTES:
        return HealthReason("disk_full", "error", f"only {free / GIB:.1f} GiB disk left", remedy)
    if free < DISK_WARN_BYTES or free < total * DISK_WARN_FRACTION:
        return HealthReason("disk_low", "warn", f"{free / GIB:.1f} GiB disk left", remedy)
    return None


def node_reasons(node_id: NodeId, reading: NodeTelemetry | None, alive: bool, state: State,
                 now: float) -> list[HealthReason]:
    reasons = []
    if not alive:
        reasons.append(HealthReason("node_gone", "error", "the node left the cluster",
                                    "restart skulk on it, or check its network link"))
    if reading is None:
        if alive:
            reasons.append(HealthReason("no_telemetry", "warn", "no readings from the node",
                                        "check the node's load and its network link"))
    else:
        if now - reading.stamp > STALE_TELEMETRY_SECONDS:
            reasons.append(HealthReason(
                "stale_telemetry", "warn", f"last readings {now - reading.stamp:.0f} s old",
                "check the node's load and its network link"))
        disk = _disk(reading)
        if disk is not None:
            reasons.append(disk)
    cool_off = state.node_cool_offs.get(node_id)
    if cool_off is not None and cool_off.until > now:
        repeated = cool_off.failures >= 2
        reasons.append(HealthReason(
            "unhealthy" if repeated else "cooling_off", "error" if repeated else "warn",
            f"{cool_off.failures} runner failure(s) in a row, the last: {cool_off.reason}; "
            f"placement avoids the node for {cool_off.until - now:.0f} s more",
            "see the node's log (`skulk logs`) and GET /v1/diagnostics/cluster"))
    for instance in state.instances.values():
        for runner_id, shard in instance.shards.items():
            status = state.runners.get(runner_id)
            if shard.node_id == node_id and isinstance(status, RunnerFailed):
                reasons.append(HealthReason(
                    "runner_failed", "error",
                    f"runner of {instance.model_id} failed: {status.error}",
                    f"see the node's log, then DELETE /instance/{instance.instance_id} and "
                    "place the model again"))
    return reasons


def node_health(nodes: Set[NodeId], readings: Mapping[NodeId, NodeTelemetry],
                live: Set[NodeId], state: State, now: float) -> dict[NodeId, dict[str, object]]:
    health: dict[NodeId, dict[str, object]] = {}
    for node_id in sorted(nodes):
        reasons = node_reasons(node_id, readings.get(node_id), node_id in live, state, now)
        levels = {r.level for r in reasons}
        level: Level = "error" if "error" in levels else "warn" if "warn" in levels else "ok"
        health[node_id] = {"level": level, "reasons": [asdict(r) for r in reasons]}
    return health
