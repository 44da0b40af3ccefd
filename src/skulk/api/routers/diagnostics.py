"""`/v1/diagnostics/node` and `/v1/diagnostics/cluster`: what an operator needs to see
when something is wrong — runtime, resources, runner processes with their flight
recorders, placements, warnings; the cluster variant asks every live node for its own."""

import os
import platform
import sys
import time
from importlib import metadata

import psutil
from fastapi import APIRouter

from skulk import __version__
from skulk.api.context import ApiContext, Context
from skulk.api.node_health import node_reasons
from skulk.api.peers import ask_peers

router = APIRouter(tags=["operations"])

_PACKAGES = ("llama-cpp-python", "eclipse-zenoh", "fastapi", "pydantic", "mlx")


def _versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for package in _PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _process(pid: int | None) -> dict[str, object] | None:
    if pid is None:
        return None
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            return {"pid": pid, "alive": process.is_running(),
                    "rss_bytes": process.memory_info().rss,
                    "cpu_seconds": sum(process.cpu_times()[:2]),
                    "threads": process.num_threads()}
    except psutil.Error as error:
        return {"pid": pid, "alive": False, "error": str(error)}


def node_diagnostics(context: ApiContext) -> dict[str, object]:
    state = context.cluster.replica.state
    memory = psutil.virtual_memory()
    runners = context.operations.runners_report()
    for runner in runners:
        pid = runner.get("pid")
        runner["process"] = _process(pid if isinstance(pid, int) else None)
    placements = [
        {"instance_id": instance.instance_id, "model_id": instance.model_id,
         "shards": [{"runner_id": runner_id, "rank": shard.rank,
                     "world_size": shard.world_size,
                     "status": getattr(state.runners.get(runner_id), "kind", None)}
                    for runner_id, shard in instance.shards.items()
                    if shard.node_id == context.cluster.node_id]}
        for instance in state.instances.values()
        if any(s.node_id == context.cluster.node_id for s in instance.shards.values())]
    live = context.cluster.live_nodes()
    warnings = [reason.__dict__ for reason in node_reasons(
        context.cluster.node_id, context.cluster.telemetry.live().get(context.cluster.node_id),
        context.cluster.node_id in live or not live, state, time.time())]
    if context.cluster.master_node() is None:
        warnings.append({"code": "no_master", "level": "warn",
                         "message": "no master elected yet",
                         "remedy": "wait a few seconds; if it lasts, check the peers' links"})
    return {
        "node_id": context.cluster.node_id,
        "runtime": {"skulk": __version__, "python": sys.version.split()[0],
                    "platform": platform.platform(), "pid": os.getpid(),
                    "uptime_seconds": round(time.monotonic() - context.operations.started_at, 1),
                    "packages": _versions()},
        "resources": {"cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
                      "memory_total_bytes": memory.total,
                      "memory_available_bytes": memory.available,
                      "process": _process(os.getpid())},
        "cluster": {"master_node_id": context.cluster.master_node(), "live_nodes": sorted(live),
                    "session": context.cluster.replica.session,
                    "last_event_applied": state.last_event_applied_idx},
        "runners": runners,
        "placements": placements,
        "open_streams": len(context.requests.streams.open_commands()),
        "sessions_open": context.requests.conversations.open_count(),
        "warnings": warnings,
    }


@router.get("/v1/diagnostics/node", summary="This node's runtime, resources, runners with "
            "their flight recorders, placements and warnings")
async def diagnostics_node(context: Context) -> dict[str, object]:
    return node_diagnostics(context)


@router.get("/v1/diagnostics/cluster",
            summary="Every live node's diagnostics, fetched from each node")
async def diagnostics_cluster(context: Context) -> dict[str, object]:
    answers, errors = await ask_peers(context, "/v1/diagnostics/node")
    return {"node_id": context.cluster.node_id,
            "nodes": {context.cluster.node_id: node_diagnostics(context), **answers},
            "errors": errors}
