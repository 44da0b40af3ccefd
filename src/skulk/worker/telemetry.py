"""This node's own readings for the telemetry plane."""

import importlib.util
import os
import shutil
import time
from pathlib import Path

import psutil

from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry, WarmModel


def probe_backends() -> list[str]:
    """Engine tags this node can honestly claim; checks importability without importing."""
    backends = []
    if importlib.util.find_spec("llama_cpp") is not None:
        backends.append("llama_cpp-cpu")
    return backends


def read_telemetry(node_id: NodeId, *, has_worker: bool, backends: list[str],
                   api_url: str | None = None, data_dir: Path | None = None,
                   warm: list[WarmModel] | None = None) -> NodeTelemetry:
    memory = psutil.virtual_memory()
    disk = shutil.disk_usage(data_dir or Path.home())
    return NodeTelemetry(
        node_id=node_id,
        stamp=time.time(),
        memory_total_bytes=memory.total,
        memory_available_bytes=memory.available,
        cpu_count=os.cpu_count() or 1,
        backends=backends,
        has_worker=has_worker,
        api_url=api_url,
        disk_total_bytes=disk.total,
        disk_free_bytes=disk.free,
        warm=warm or [],
    )
