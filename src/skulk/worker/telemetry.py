"""This node's own readings for the telemetry plane."""

import importlib.util
import os
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import psutil

from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry, Reachability, WarmModel


def probe_backends(platform: str = sys.platform) -> list[str]:
    """Engine tags this node can honestly claim; checks importability without importing.

    MLX is never imported here: its native library costs memory and threads in the node
    process, and only runners use it.
    """
    backends = []
    if importlib.util.find_spec("llama_cpp") is not None:
        backends.append("llama_cpp-cpu")
    if _mlx_installed(platform) and importlib.util.find_spec("mlx_lm") is not None:
        backends.append("mlx-metal" if platform == "darwin" else "mlx-cpu")
    return backends


def _mlx_installed(platform: str) -> bool:
    """MLX's compiled core is present; on Linux, also the CPU backend library, which comes
    from the separate `mlx-cpu` wheel (`mlx[cpu]`) that the `mlx` wheel alone lacks."""
    spec = importlib.util.find_spec("mlx")
    folders = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    has_core = any(any(f.glob("core.*")) for f in folders)
    if platform != "linux":
        return has_core
    return has_core and any(any((f / "lib").glob("libmlx.so*")) for f in folders)


def read_telemetry(node_id: NodeId, *, has_worker: bool, backends: list[str],
                   api_url: str | None = None, data_dir: Path | None = None,
                   warm: list[WarmModel] | None = None,
                   reachability: Reachability | None = None,
                   drafters: list[str] | None = None) -> NodeTelemetry:
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
        drafters=drafters or [],
        reachability=reachability or Reachability(),
    )


TELEMETRY_INTERVAL_SECONDS = 2.0


async def publish_readings_forever(read: Callable[[], NodeTelemetry], view: TelemetryView,
                                   publish: Callable[[NodeTelemetry], Awaitable[None]],
                                   interval: float = TELEMETRY_INTERVAL_SECONDS) -> None:
    """Every `interval` seconds: take this node's reading, keep it, and publish it."""
    while True:
        reading = read()
        view.update(reading, gossip=False)  # ours needs no round trip
        await publish(reading)
        await anyio.sleep(interval)
