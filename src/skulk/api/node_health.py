"""Derived node health: ok, warn or error, each reason with what to do about it.

A pure reading of what the node already knows (telemetry, membership, State); nothing here
is gossiped or stored.
"""

from collections.abc import Mapping, Set
from dataclasses import asdict, dataclass
from typing import Literal

from skulk.shared.reading_changes import FULL_REFRESH_SECONDS
from skulk.shared.types.ids import NodeId
from skulk.shared.types.runners import RunnerFailed
from skulk.shared.types.state import State
from skulk.shared.types.telemetry import NodeTelemetry

Level = Literal["ok", "warn", "error"]
GIB = 1024**3
DISK_ERROR_BYTES = 1 * GIB
DISK_WARN_BYTES = 5 * GIB
DISK_WARN_FRACTION = 0.10
# An unchanged reading comes every 15 s (a changed one at once); one refresh missed and
# three 2 s reads more is worth a warning.
STALE_TELEMETRY_SECONDS = FULL_REFRESH_SECONDS + 6.0


# Every reason a node's health can give: its level, when it is given, and what to do (the
# troubleshooting page of the website is generated from this table).
REASONS: dict[str, tuple[Level, str, str]] = {
    "node_gone": ("error", "the node left the cluster (no heartbeat within its TTL)",
                  "restart skulk on it, or check its network link"),
    "node_stopped": ("warn", "the node was stopped on purpose (`skulk stop`, SIGTERM, Ctrl-C) "
                     "and has not come back", "start it again when it is wanted; `skulk "
                     "cluster forget NODE` if it is gone for good"),
    "no_telemetry": ("warn", "a live member has sent no readings yet",
                     "check the node's load and its network link"),
    "stale_telemetry": ("warn", f"the newest readings are over {STALE_TELEMETRY_SECONDS:g} s "
                        "old (they come when they change, and every "
                        f"{FULL_REFRESH_SECONDS:g} s)",
                        "check the node's load and its network link"),
    "disk_full": ("error", "under 1 GiB free on the data dir's volume",
                  "free space on the volume that holds the node's data dir"),
    "disk_low": ("warn", "under 5 GiB or under 10% free on the data dir's volume",
                 "free space on the volume that holds the node's data dir"),
    "cooling_off": ("warn", "a runner of this node was killed for a missed deadline (it hung "
                    "loading, or a running request made no progress); placement avoids the "
                    "node for 300 s while anything else fits",
                    "see the node's log (`skulk logs`) and GET /v1/diagnostics/cluster"),
    "unhealthy": ("error", "runners of this node missed their deadlines twice or more in a "
                  "row; placement avoids it for 300 s times the failures",
                  "see the node's log (`skulk logs`) and GET /v1/diagnostics/cluster; check "
                  "the machine (sleep, swapping, a stalled disk)"),
    "runner_failed": ("error", "a runner of an instance on this node failed",
                      "see the node's log, then DELETE /instance/{instance_id} and place the "
                      "model again"),
}


def _reason(code: str, message: str, **remedy_fields: str) -> "HealthReason":
    level, _, remedy = REASONS[code]
    return HealthReason(code, level, message, remedy.format(**remedy_fields))


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
    if free < DISK_ERROR_BYTES:
        return _reason("disk_full", f"only {free / GIB:.1f} GiB disk left")
    if free < DISK_WARN_BYTES or free < total * DISK_WARN_FRACTION:
        return _reason("disk_low", f"{free / GIB:.1f} GiB disk left")
    return None


def node_reasons(node_id: NodeId, reading: NodeTelemetry | None, alive: bool, state: State,
                 now: float) -> list[HealthReason]:
    reasons = []
    stopped = not alive and reading is not None and reading.stopping
    if stopped:
        reasons.append(_reason("node_stopped", "the node was stopped"))
    elif not alive:
        reasons.append(_reason("node_gone", "the node left the cluster"))
    if reading is None:
        if alive:
            reasons.append(_reason("no_telemetry", "no readings from the node"))
    else:
        if now - reading.stamp > STALE_TELEMETRY_SECONDS and not stopped:
            reasons.append(_reason("stale_telemetry",
                                   f"last readings {now - reading.stamp:.0f} s old"))
        disk = _disk(reading)
        if disk is not None:
            reasons.append(disk)
    cool_off = state.node_cool_offs.get(node_id)
    if cool_off is not None and cool_off.until > now:
        code = "unhealthy" if cool_off.failures >= 2 else "cooling_off"
        reasons.append(_reason(
            code, f"{code.replace('_', ' ')}: {cool_off.failures} runner failure(s) in a "
            f"row, the last: {cool_off.reason}; placement avoids the node for "
            f"{cool_off.until - now:.0f} s more"))
    for instance in state.instances.values():
        for runner_id, shard in instance.shards.items():
            status = state.runners.get(runner_id)
            if shard.node_id == node_id and isinstance(status, RunnerFailed):
                reasons.append(_reason(
                    "runner_failed", f"runner of {instance.model_id} failed: {status.error}",
                    instance_id=str(instance.instance_id)))
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
