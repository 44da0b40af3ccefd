"""This node's own readings for the telemetry plane."""

import os
import shutil
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from skulk.models.store.manifest import stored_entries
from skulk.models.store.pull import PARTIAL_DIR
from skulk.models.store.pull_progress import pulls_under_way
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import (
    GpuDevice,
    HeldFile,
    HeldModel,
    NodeTelemetry,
    Reachability,
    WarmModel,
)
from skulk.worker.engines.node_options import EngineLimits
from skulk.worker.engines.registry import ENGINES


def probe_backends(platform: str = sys.platform, gpus: Sequence[GpuDevice] = ()) -> list[str]:
    """Engine tags this node can honestly claim with these GPUs, from each engine's own
    probe (which finds its library without importing it: only runners load an engine)."""
    return [tag for engine in ENGINES.values()
            if (tag := engine.probe_backend(platform, gpus)) is not None]


def held_models(models_dir: Path) -> list[HeldModel]:
    """The complete models in this node's store, for peers to fetch from it: names, sizes
    and sha256 only (the cards stay in the manifests, keeping readings small)."""
    return [HeldModel(model_id=entry.model_id, format=entry.format, directory=entry.directory,
                      layers=entry.layers,
                      files=[HeldFile(name=f.name, size_bytes=f.size_bytes, sha256=f.sha256)
                             for f in entry.files])
            for entry in stored_entries(models_dir)]


def read_telemetry(node_id: NodeId, *, has_worker: bool, backends: list[str],
                   api_url: str | None = None, data_dir: Path | None = None,
                   warm: list[WarmModel] | None = None,
                   reachability: Reachability | None = None,
                   drafters: list[str] | None = None,
                   models_dir: Path | None = None,
                   weights_port: int | None = None,
                   gpus: Sequence[GpuDevice] = (),
                   memory_limit: int | None = None,
                   limits: EngineLimits | None = None) -> NodeTelemetry:
    """This node's readings now; `models_dir` given, the models its store holds too.
    `gpus` is the latest GPU probe's (probing takes too long for every reading).
    `memory_limit` caps what the node reports it can lend models (`--memory-limit`)."""
    machine = psutil.virtual_memory()
    total, available = lent_memory(machine.total, machine.available, memory_limit,
                                   _runners_rss() if memory_limit is not None else 0)
    disk = shutil.disk_usage(data_dir or Path.home())
    return NodeTelemetry(
        node_id=node_id,
        stamp=time.time(),
        memory_total_bytes=total,
        memory_available_bytes=available,
        cpu_count=os.cpu_count() or 1,
        hostname=socket.gethostname()[:255],
        backends=backends,
        has_worker=has_worker,
        api_url=api_url,
        disk_total_bytes=disk.total,
        disk_free_bytes=disk.free,
        warm=warm or [],
        drafters=drafters or [],
        reachability=reachability or Reachability(),
        held_models=[] if models_dir is None else held_models(models_dir),
        pulls=[] if models_dir is None else pulls_under_way(models_dir / PARTIAL_DIR),
        weights_port=weights_port,
        gpus=list(gpus),
        batch_sizes={} if limits is None else limits.batch_sizes,
        kv_contexts={} if limits is None else limits.kv_contexts,
        batching=True if limits is None else limits.batching,
    )


def lent_memory(total: int, available: int, limit: int | None, runners_rss: int
                ) -> tuple[int, int]:
    """(total, available) as the node reports them: the machine's, or within `limit` the
    limit and what this node's runners (`runners_rss`, resident) leave of it."""
    if limit is None:
        return total, available
    return min(total, limit), max(0, min(available, limit - runners_rss))


def _runners_rss() -> int:
    """Resident memory of this process's children: the runners holding models."""
    resident = 0
    for child in psutil.Process().children(recursive=True):
        try:
            resident += child.memory_info().rss
        except psutil.Error:
            continue  # it ended as we looked
    return resident
